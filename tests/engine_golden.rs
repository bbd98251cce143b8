//! The end-to-end golden of reference spec section 17, through the engine API only.
//!
//! Root directory `kb`, salt `spec-salt`, Fixture A config plus the alias group
//! `"Taylor Reed" = ["Taylor", "taylor.reed@example.invalid"]`. The policy lists below
//! are what the reference derives from that config (root term `kb` first among the
//! clients, person names expanded). The expected texts are copied from the spec; the
//! `redctx_read` header is assembled here from `path_id` and `redact_path`, the way
//! the read tool renders it, and the receipt covers the content and the header path.

use redctx_daemon::engine::python::text::splitlines;
use redctx_daemon::engine::{
    AliasGroup, Category, Counts, DetectorProfile, Engine, Mode, Policy, RedactOptions,
};
use std::sync::Arc;

const GOLDEN_REL: &str = "context/Client Alpha - Taylor Reed notes.md";

const GOLDEN_SOURCE: &str = "# Client Alpha notes

Taylor Reed met Jordan Vale from Riverton Partners.
Email taylor.reed@example.invalid and visit https://example.invalid/private.
Project Meridian depends on Azure and PostgreSQL policy controls.
password = superSecret1234
Call +1 415 555 0100 or ping @tay_reed. Host 10.12.30.4, db01.internal.example.
Attendees: Avery, Kim, Al
";

const STRICT_READ: &str = "--- @p_e3f7588807ee context/[CLIENT_8ca314beac5e5cb66ab81b057057cdba] - [PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327] notes.md lines 1-8 ---
# [CLIENT_8ca314beac5e5cb66ab81b057057cdba] notes

[PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327] met [PERSON_5e8a430d9a172e7fb5d020d63efef30d] from [ORG_a7ed159dc65788927721df2f8876b8d7].
[ENTITY_807fa148abba143d9d275dd37e4003f0] [EMAIL_b6e03a41f7e5c4a5d77d8f67fcef2327.bfdfbd5d] and visit [URL_ca77d628c2b78c833d3a894eec8a7b86]
[SENSITIVE_2bf22bc42b32f4e971534d7ec1dbefaf] depends on Azure and PostgreSQL policy controls.
[SECRET_8b3729e29e3d6c71a14e63e914715ae4]
[ENTITY_d7635fa56b71f55065f3fe27c57d14b8] [PHONE_e8dec1fd8ac9a67e26b2b83d151c2d40] or ping [HANDLE_3b53685ffd63412ece39a214e5ecdf20] [ENTITY_b1431a5307835d4963f15be2dc1979d6] [IP_d3b3683b822146a0d30763db64ee79d8], [DOMAIN_7ed8861d820004935723317cca193ece].
Attendees: [PERSON_80947927a2988995ec102c2a299eafb4], [PERSON_e585a9b6a71c612a105c65b10d436557], [PERSON_edba91fe24cd44d75981f835a9e34551]
";

const STRICT_RECEIPT: &str = r#"{"detector_profile":"default","counts_by_category":{"CLIENT":2,"DOMAIN":1,"EMAIL":1,"ENTITY":3,"HANDLE":1,"IP":1,"ORG":1,"PERSON":6,"PHONE":1,"SECRET":1,"SENSITIVE":1,"URL":1}}"#;

const TREE: &str = "@p_950fe0c0dd4a ./
  @p_622b2dcc77b0 context/
    @p_e3f7588807ee [CLIENT_8ca314beac5e5cb66ab81b057057cdba] - [PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327] notes.md
  @p_3e6e02b9c77a docs/
    @p_495c4e4fdca8 [ENTITY_2ea2e2042b6c1cd6e2b51e860775f5e7].[ENTITY_c05b64e6eac7b6159f5bc974316400f7]
    @p_bad6cf103171 readme.[ENTITY_9077c92b491a9a5b5bea9d2a771f0234]
";

/// Line-by-line comparison that names each differing line, so a failure reads as a
/// diff rather than two long escaped strings.
#[track_caller]
fn assert_text_eq(actual: &str, expected: &str, what: &str) {
    if actual == expected {
        return;
    }
    let actual_lines: Vec<&str> = actual.split_inclusive('\n').collect();
    let expected_lines: Vec<&str> = expected.split_inclusive('\n').collect();
    let mut report = format!("{what} differs from the spec golden:\n");
    for i in 0..actual_lines.len().max(expected_lines.len()) {
        let (a, e) = (actual_lines.get(i), expected_lines.get(i));
        if a != e {
            report.push_str(&format!(
                "  line {}:\n    expected: {:?}\n    actual:   {:?}\n",
                i + 1,
                e,
                a
            ));
        }
    }
    panic!("{report}");
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

/// The policy the reference derives for the golden root (verified against the oracle).
fn golden_policy(mode: Mode) -> Policy {
    Policy {
        salt: "spec-salt".to_owned(),
        mode,
        detector_profile: DetectorProfile::Default,
        detectors: false,
        clients: strings(&["kb", "Client Alpha", "CA"]),
        organizations: strings(&["Riverton Partners"]),
        people: strings(&[
            "Taylor Reed",
            "Taylor",
            "Reed",
            "Jordan Vale",
            "Jordan",
            "Vale",
        ]),
        terms: strings(&["Project Meridian"]),
        allow: strings(&["Azure", "PostgreSQL"]),
        alias_groups: vec![AliasGroup {
            canonical: "Taylor Reed".to_owned(),
            category: Category::PERSON,
            aliases: strings(&["Taylor", "taylor.reed@example.invalid"]),
        }],
        root_terms: strings(&["kb"]),
        ..Policy::default()
    }
}

fn engine(mode: Mode) -> Engine {
    Engine::new(Arc::new(golden_policy(mode))).expect("golden policy compiles")
}

/// `redctx_read` of the whole golden file: header line, redacted body, and the receipt
/// of the call (content plus header path).
fn read(engine: &Engine) -> (String, String) {
    let body = engine
        .redact(
            GOLDEN_SOURCE,
            RedactOptions {
                preserve_line_count: true,
                prose: true,
                path: "",
            },
        )
        .expect("redact golden file");
    let path = engine.redact_path(GOLDEN_REL).expect("redact golden path");
    let lines = splitlines(&body.text, true).len();
    let text = format!(
        "--- {} {} lines 1-{lines} ---\n{}",
        engine.path_id(GOLDEN_REL),
        path.text,
        body.text
    );
    let mut counts = Counts::default();
    counts.merge(&body.counts);
    counts.merge(&path.counts);
    (text, receipt_json(&counts))
}

/// The receipt as the reference serialises it (compact JSON, keys sorted).
fn receipt_json(counts: &Counts) -> String {
    let mut entries: Vec<(&str, u64)> = counts.0.iter().map(|(c, n)| (c.as_str(), *n)).collect();
    entries.sort();
    let inner: Vec<String> = entries
        .iter()
        .map(|(c, n)| format!("\"{c}\":{n}"))
        .collect();
    format!(
        "{{\"detector_profile\":\"default\",\"counts_by_category\":{{{}}}}}",
        inner.join(",")
    )
}

#[test]
fn strict_read_of_the_golden_file_matches_spec_17() {
    let (text, receipt) = read(&engine(Mode::Strict));
    assert_text_eq(&text, STRICT_READ, "strict read text");
    assert_eq!(receipt, STRICT_RECEIPT, "strict receipt");
}

#[test]
fn balanced_read_keeps_email_call_host_and_counts_no_entity() {
    let (text, receipt) = read(&engine(Mode::Balanced));
    let expected = STRICT_READ
        .replace("[ENTITY_807fa148abba143d9d275dd37e4003f0]", "Email")
        .replace("[ENTITY_d7635fa56b71f55065f3fe27c57d14b8]", "Call")
        .replace("[ENTITY_b1431a5307835d4963f15be2dc1979d6]", "Host");
    assert_text_eq(&text, &expected, "balanced read text");
    assert_eq!(
        receipt,
        STRICT_RECEIPT.replace("\"ENTITY\":3,", ""),
        "balanced receipt"
    );
}

#[test]
fn tree_names_and_ids_match_spec_17_in_both_modes() {
    for mode in [Mode::Strict, Mode::Balanced] {
        let engine = engine(mode);
        // (depth, root-relative path, is_dir) in the order `tree` lists them.
        let entries = [
            (1, "context", true),
            (2, GOLDEN_REL, false),
            (1, "docs", true),
            (2, "docs/blob.bin", false),
            (2, "docs/readme.txt", false),
        ];
        let mut tree = format!("{} ./\n", engine.path_id("."));
        for (depth, rel, is_dir) in entries {
            let name = rel.rsplit('/').next().expect("name");
            let shown = engine.redact_path(name).expect("redact name").text;
            tree.push_str(&format!(
                "{}{} {}{}\n",
                "  ".repeat(depth),
                engine.path_id(rel),
                shown,
                if is_dir { "/" } else { "" }
            ));
        }
        assert_text_eq(&tree, TREE, &format!("tree ({})", mode.as_str()));
    }
}

/// Spec 5.8 examples: salt `golden-salt`, balanced, term `quokkaproject`.
#[test]
fn path_redaction_examples_of_spec_5_8() {
    let policy = Policy {
        salt: "golden-salt".to_owned(),
        mode: Mode::Balanced,
        detectors: false,
        terms: strings(&["quokkaproject"]),
        ..Policy::default()
    };
    let engine = Engine::new(Arc::new(policy)).expect("policy compiles");
    let cases = [
        (
            "docs/recovery.txt",
            "docs/[ENTITY_744724cb502cf2065928c6b96d0b5fd1].[ENTITY_83eab1868e9d09be426db8f133f41030]",
            "@p_edc1e3a0cbb2",
        ),
        (
            "notes/quokkaproject plan.md",
            "notes/[SENSITIVE_b31768c24f00422e1ac627a60bf3f660] [ENTITY_8da8ad8d2ed4843ab710ba6b5d46d3a2].md",
            "@p_1ec636f068ab",
        ),
        (
            "docs/backup.md",
            "docs/[ENTITY_5884b93d9b9614a4b1eaa9dd75218b07].md",
            "@p_4d6a1e447acd",
        ),
        (
            "notes/misc.txt",
            "notes/[ENTITY_e614f4bf1cc621bdb804c4e888cb23c3].[ENTITY_83eab1868e9d09be426db8f133f41030]",
            "@p_59b0163ec6ab",
        ),
    ];
    for (rel, redacted, id) in cases {
        assert_eq!(
            engine.redact_path(rel).expect("redact path").text,
            redacted,
            "{rel}"
        );
        assert_eq!(engine.path_id(rel), id, "{rel}");
    }
}
