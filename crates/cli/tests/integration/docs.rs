//! `tailbound completions` and `tailbound man`: generated from the command definitions, so
//! every command and flag `--help` knows is in them.

use crate::common::{stderr, tailbound};

#[test]
fn bash_completions_know_every_command_and_their_flags() {
    let out = tailbound(&["completions", "bash"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(
        script.contains("_tailbound()"),
        "not a bash completion function"
    );
    for word in [
        "enforce",
        "testbed",
        "completions",
        "vdc__subcmd__enforcer",
        "--policies",
        "--hosts",
    ] {
        assert!(
            script.contains(word),
            "{word} missing from the bash completions"
        );
    }
    let zsh = tailbound(&["completions", "zsh"]);
    assert!(zsh.status.success() && zsh.stdout.starts_with(b"#compdef tailbound"));
}

#[test]
fn an_unknown_shell_names_the_value_and_the_accepted_ones() {
    let out = tailbound(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("tcsh") && e.contains("bash") && e.contains("zsh"),
        "{e}"
    );
}

#[test]
fn man_writes_one_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    let out = tailbound(&["man", "--out-dir", pages.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = |name: &str| {
        std::fs::read_to_string(pages.join(name))
            .unwrap_or_else(|e| panic!("{name} was not written: {e}"))
    };
    let top = page("tailbound.1");
    assert!(top.contains(".TH tailbound 1"), "{top:.200}");
    assert!(
        top.contains("tailbound\\-enforce(1)"),
        "the top page lists the commands"
    );
    let bound = page("tailbound-bound.1");
    assert!(bound.contains(".TH tailbound-bound 1"), "{bound:.300}");
    assert!(
        bound.contains("\\-\\-method"),
        "the bound page lists --method"
    );
    page("tailbound-vdc-enforcer.1");
    page("tailbound-experiment-admission.1");
    let n = std::fs::read_dir(&pages).unwrap().count();
    assert!(n > 40, "{n} pages: one per command and subcommand expected");
    assert!(
        stderr(&out).contains(&format!("wrote {n} man pages")),
        "{}",
        stderr(&out)
    );
}
