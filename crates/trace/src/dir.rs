//! Folders of traces: the one rule for which files of a folder are traces.

use std::path::{Path, PathBuf};

/// Why a folder of traces could not be listed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceDirError {
    #[error("cannot list traces in {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} holds no traces; a trace folder holds files named *.csv", path.display())]
    Empty { path: PathBuf },
}

/// The traces of folder `dir`: its regular files named `*.csv` (any case), sorted by path.
/// An empty folder is an error.
pub fn list_traces(dir: &Path) -> Result<Vec<PathBuf>, TraceDirError> {
    let io = |source| TraceDirError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_file()
            && path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        return Err(TraceDirError::Empty {
            path: dir.to_path_buf(),
        });
    }
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_only_csv_files_sorted_and_refuses_an_empty_folder() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b.csv", "a.CSV", "README.md", "c.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("d.csv")).unwrap();
        let names: Vec<String> = list_traces(dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.CSV", "b.csv"]);
        let empty = tempfile::tempdir().unwrap();
        let e = list_traces(empty.path()).unwrap_err().to_string();
        assert!(e.contains("holds no traces"), "{e}");
        let e = list_traces(&empty.path().join("missing"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing"), "{e}");
    }
}
