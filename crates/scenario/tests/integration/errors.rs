//! Every bad-input form is rejected with the file, the place, the field and the value.

use tailbound_scenario::load;

const HOSTS: &str = r#"
[[hosts]]
name = "c"
[[hosts]]
name = "s"
"#;

/// A scenario of HOSTS plus one tenant with `fields`, loaded from `bad.toml`.
fn tenant_error(fields: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let text =
        format!("{HOSTS}\n[[tenants]]\nname = \"web\"\nclient = \"c\"\nserver = \"s\"\n{fields}\n");
    let p = crate::write(dir.path(), "bad.toml", &text);
    load(&p).unwrap_err().to_string()
}

fn model() -> &'static str {
    r#"model = { arrival = { model = "poisson", rate_per_s = 10 }, sizes = { model = "fixed", bytes = 100 }, read_fraction = 1, duration_s = 10, vocabulary = "disk" }"#
}

#[test]
fn unknown_host() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{HOSTS}\n[[tenants]]\nname = \"web\"\nclient = \"c\"\nserver = \"nowhere\"\nslo = \"20ms\"\n{}\n",
        model()
    );
    let p = crate::write(dir.path(), "bad.toml", &text);
    let msg = load(&p).unwrap_err().to_string();
    crate::assert_mentions(
        &msg,
        &[
            "bad.toml",
            "tenant \"web\"",
            "server",
            "\"nowhere\"",
            "\"c\", \"s\"",
        ],
    );
}

#[test]
fn duplicate_names() {
    let dir = tempfile::tempdir().unwrap();
    let p = crate::write(
        dir.path(),
        "bad.toml",
        &format!("{HOSTS}\n[[hosts]]\nname = \"c\"\n"),
    );
    let msg = load(&p).unwrap_err().to_string();
    crate::assert_mentions(&msg, &["bad.toml", "host \"c\"", "name", "twice"]);

    let t = format!(
        "[[tenants]]\nname = \"web\"\nclient = \"c\"\nserver = \"s\"\nslo = \"20ms\"\n{}\n",
        model()
    );
    let p = crate::write(dir.path(), "bad2.toml", &format!("{HOSTS}\n{t}\n{t}"));
    let msg = load(&p).unwrap_err().to_string();
    crate::assert_mentions(&msg, &["bad2.toml", "tenant \"web\"", "name", "twice"]);
}

#[test]
fn zero_slo() {
    let msg = tenant_error(&format!("slo = \"0ms\"\n{}", model()));
    crate::assert_mentions(
        &msg,
        &[
            "bad.toml",
            "tenant \"web\"",
            "slo",
            "\"0ms\"",
            "not positive",
        ],
    );
}

#[test]
fn percentile_100() {
    let msg = tenant_error(&format!("slo = \"20ms\"\npercentile = 100\n{}", model()));
    crate::assert_mentions(
        &msg,
        &[
            "bad.toml",
            "tenant \"web\"",
            "percentile",
            "100",
            "strictly between 0 and 100",
        ],
    );
}

#[test]
fn missing_trace_file() {
    let msg = tenant_error("slo = \"20ms\"\ntrace = \"no/such.csv\"");
    crate::assert_mentions(
        &msg,
        &["bad.toml", "tenant \"web\"", "no/such.csv", "not found"],
    );
}

#[test]
fn trace_and_model_both_or_neither() {
    let msg = tenant_error(&format!("slo = \"20ms\"\ntrace = \"x.csv\"\n{}", model()));
    crate::assert_mentions(&msg, &["bad.toml", "tenant \"web\"", "trace", "both"]);
    let msg = tenant_error("slo = \"20ms\"");
    crate::assert_mentions(
        &msg,
        &["bad.toml", "tenant \"web\"", "trace", "neither", "model"],
    );
}

#[test]
fn bad_units() {
    let dir = tempfile::tempdir().unwrap();
    let p = crate::write(
        dir.path(),
        "bad.toml",
        "[[hosts]]\nname = \"c\"\nlink = \"fast\"\n",
    );
    let msg = load(&p).unwrap_err().to_string();
    crate::assert_mentions(
        &msg,
        &["bad.toml", "host \"c\"", "link", "\"fast\"", "Gbit"],
    );
    let msg = tenant_error(&format!("slo = \"soon\"\n{}", model()));
    crate::assert_mentions(&msg, &["bad.toml", "slo", "\"soon\"", "ms"]);
}

#[test]
fn storage_without_a_device_and_bad_characterize_values() {
    let msg = tenant_error(&format!("slo = \"20ms\"\nstorage = true\n{}", model()));
    crate::assert_mentions(
        &msg,
        &[
            "bad.toml",
            "tenant \"web\"",
            "storage",
            "\"s\" has no storage",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let p = crate::write(
        dir.path(),
        "bad.toml",
        &format!("[characterize]\npart = \"third-half\"\n{HOSTS}"),
    );
    let msg = load(&p).unwrap_err().to_string();
    crate::assert_mentions(&msg, &["bad.toml", "third-half", "first-half", "whole"]);
}

#[test]
fn unknown_keys_and_bad_models() {
    let msg = tenant_error(&format!("slo = \"20ms\"\nsl0 = 3\n{}", model()));
    crate::assert_mentions(&msg, &["bad.toml", "sl0"]);
    let msg = tenant_error(&format!(
        "slo = \"20ms\"\n{}",
        model().replace("rate_per_s = 10", "rate_per_s = -1")
    ));
    crate::assert_mentions(&msg, &["bad.toml", "tenant \"web\"", "model", "rate_per_s"]);
}
