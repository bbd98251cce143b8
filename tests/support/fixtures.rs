//! Fixture roots of the spec: Fixture A (14.2 with the alias group of the section 17
//! end-to-end golden) and the retrieval corpus of 7.2/17.

use std::path::Path;

/// Relative path of the Fixture A notes file.
pub const NOTES: &str = "context/Client Alpha - Taylor Reed notes.md";

/// The notes file of the section 17 end-to-end golden.
pub const NOTES_TEXT: &str = "# Client Alpha notes

Taylor Reed met Jordan Vale from Riverton Partners.
Email taylor.reed@example.invalid and visit https://example.invalid/private.
Project Meridian depends on Azure and PostgreSQL policy controls.
password = superSecret1234
Call +1 415 555 0100 or ping @tay_reed. Host 10.12.30.4, db01.internal.example.
Attendees: Avery, Kim, Al
";

/// Raw values of Fixture A that must never reach a client (tests/fixtures.py).
pub const RAW_PRIVATE_VALUES: &[&str] = &[
    "Client Alpha",
    "Taylor",
    "Reed",
    "Jordan",
    "Vale",
    "Riverton Partners",
    "taylor.reed",
    "https://example.invalid",
    "Project Meridian",
];

/// The Fixture A config with `salt` and the alias group of the section 17 golden, plus
/// `extra` lines appended to the `[redaction]` table.
pub fn fixture_a_config(salt: &str, extra: &str) -> String {
    format!(
        "[redaction]
salt = \"{salt}\"
clients = [\"Client Alpha\", \"CA\"]
organizations = [\"Riverton Partners\"]
people = [\"Taylor Reed\", \"Jordan Vale\"]
terms = [\"Project Meridian\"]
allow = [\"Azure\", \"PostgreSQL\"]
{extra}
[redaction.aliases]
\"Taylor Reed\" = [\"Taylor\", \"taylor.reed@example.invalid\"]
"
    )
}

/// Writes `rel` under `root` (parents created), bytes as given.
pub fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// Fixture A into `root` (a directory named `kb` for the goldens): the config at
/// `.agent-context-redactor.toml`, the notes file, `docs/readme.txt`, `docs/blob.bin`
/// and `personal/secret.md`. `extra_config` goes into `[redaction]`.
pub fn fixture_a(root: &Path, salt: &str, extra_config: &str) {
    write(
        root,
        ".agent-context-redactor.toml",
        fixture_a_config(salt, extra_config),
    );
    write(root, NOTES, NOTES_TEXT);
    write(
        root,
        "docs/readme.txt",
        "line one\nline two\nTaylor said hi\n",
    );
    write(root, "docs/blob.bin", b"\x00\x01\x02binary\x00");
    write(root, "personal/secret.md", "Raw secret\n");
}

/// The retrieval corpus of spec 7.2/17 (config: salt `golden-salt`, term
/// `quokkaproject`; served in balanced mode).
pub fn retrieval_corpus(root: &Path, extra_config: &str) {
    write(
        root,
        ".agent-context-redactor.toml",
        format!("[redaction]\nsalt = \"golden-salt\"\nterms = [\"quokkaproject\"]\n{extra_config}"),
    );
    write(
        root,
        "docs/backup.md",
        "# Backup runbook\n\nThe quokkaproject database backup runs nightly.\nRecovery drills happen monthly.\n",
    );
    write(
        root,
        "docs/recovery.txt",
        "database recovery\n\nbackup procedures for PostgreSQL\nContact taylor@example.invalid\n",
    );
    write(
        root,
        "notes/misc.txt",
        format!("{}backup once\n", "unrelated text\n".repeat(30)),
    );
    write(
        root,
        "notes/quokkaproject plan.md",
        "database database database\n",
    );
}

/// The exact retrieval golden of spec 17 (query `database backup recovery`).
pub const RETRIEVAL_GOLDEN: &str = "--- @p_edc1e3a0cbb2 docs/[ENTITY_744724cb502cf2065928c6b96d0b5fd1].[ENTITY_83eab1868e9d09be426db8f133f41030] lines 1-4 score=2.493 ---
database recovery

backup procedures for PostgreSQL
Contact [EMAIL_0d4c962d34d08573eada0df1c5f701ed]

--- @p_4d6a1e447acd docs/[ENTITY_5884b93d9b9614a4b1eaa9dd75218b07].md lines 1-4 score=2.416 ---
# Backup runbook

The [SENSITIVE_b31768c24f00422e1ac627a60bf3f660] database backup runs nightly.
Recovery drills happen monthly.

--- @p_1ec636f068ab notes/[SENSITIVE_b31768c24f00422e1ac627a60bf3f660] [ENTITY_8da8ad8d2ed4843ab710ba6b5d46d3a2].md lines 1-1 score=1.028 ---
database database database

--- @p_59b0163ec6ab notes/[ENTITY_e614f4bf1cc621bdb804c4e888cb23c3].[ENTITY_83eab1868e9d09be426db8f133f41030] lines 25-31 score=0.581 ---
unrelated text
unrelated text
unrelated text
unrelated text
unrelated text
unrelated text
backup once

";

/// The `redctx_read` text of the section 17 end-to-end golden (strict, `spec-salt`).
pub const READ_GOLDEN_STRICT: &str = "--- @p_e3f7588807ee context/[CLIENT_8ca314beac5e5cb66ab81b057057cdba] - [PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327] notes.md lines 1-8 ---
# [CLIENT_8ca314beac5e5cb66ab81b057057cdba] notes

[PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327] met [PERSON_5e8a430d9a172e7fb5d020d63efef30d] from [ORG_a7ed159dc65788927721df2f8876b8d7].
[ENTITY_807fa148abba143d9d275dd37e4003f0] [EMAIL_b6e03a41f7e5c4a5d77d8f67fcef2327.bfdfbd5d] and visit [URL_ca77d628c2b78c833d3a894eec8a7b86]
[SENSITIVE_2bf22bc42b32f4e971534d7ec1dbefaf] depends on Azure and PostgreSQL policy controls.
[SECRET_8b3729e29e3d6c71a14e63e914715ae4]
[ENTITY_d7635fa56b71f55065f3fe27c57d14b8] [PHONE_e8dec1fd8ac9a67e26b2b83d151c2d40] or ping [HANDLE_3b53685ffd63412ece39a214e5ecdf20] [ENTITY_b1431a5307835d4963f15be2dc1979d6] [IP_d3b3683b822146a0d30763db64ee79d8], [DOMAIN_7ed8861d820004935723317cca193ece].
Attendees: [PERSON_80947927a2988995ec102c2a299eafb4], [PERSON_e585a9b6a71c612a105c65b10d436557], [PERSON_edba91fe24cd44d75981f835a9e34551]
";

/// The receipt of that read (spec 17).
pub const READ_GOLDEN_RECEIPT: &str = r#"{"detector_profile":"default","counts_by_category":{"CLIENT":2,"DOMAIN":1,"EMAIL":1,"ENTITY":3,"HANDLE":1,"IP":1,"ORG":1,"PERSON":6,"PHONE":1,"SECRET":1,"SENSITIVE":1,"URL":1}}"#;

/// `redctx_tree` of the Fixture A root (spec 17).
pub const TREE_GOLDEN: &str = "@p_950fe0c0dd4a ./
  @p_622b2dcc77b0 context/
    @p_e3f7588807ee [CLIENT_8ca314beac5e5cb66ab81b057057cdba] - [PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327] notes.md
  @p_3e6e02b9c77a docs/
    @p_495c4e4fdca8 [ENTITY_2ea2e2042b6c1cd6e2b51e860775f5e7].[ENTITY_c05b64e6eac7b6159f5bc974316400f7]
    @p_bad6cf103171 readme.[ENTITY_9077c92b491a9a5b5bea9d2a771f0234]
";

/// An executable wrapper under `dir` that runs the test detector of `tests/detectors/`
/// (`--detector exec=PROGRAM`) with `args` (its misbehaviour options).
pub fn test_detector(dir: &Path, name: &str, args: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/detectors/test_detector.py");
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("#!/bin/sh\nexec python3 {} {args}\n", script.display()),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}
