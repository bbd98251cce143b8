//! Behaviour of the whole detector layer: what gets redacted, what stays readable.

use super::*;

fn spans(path: &str, text: &str) -> Vec<(String, &'static str)> {
    let d = Detector::new();
    d.detect(
        text,
        &DetectContext {
            rel_path: path,
            prose: false,
        },
    )
    .into_iter()
    .map(|f| (text[f.start..f.end].to_owned(), f.detector))
    .collect()
}

fn values(path: &str, text: &str) -> Vec<String> {
    spans(path, text).into_iter().map(|(v, _)| v).collect()
}

/// Asserts that `secret` is one of the values redacted in `line` of a file at `path`.
fn assert_redacts(path: &str, line: &str, secret: &str) {
    assert!(
        values(path, line).iter().any(|v| v == secret),
        "{line}: {:?}",
        spans(path, line)
    );
}

/// Asserts that no detector whose id starts with `prefix` fires in `line`.
fn assert_no_span(path: &str, line: &str, prefix: &str) {
    assert!(
        !spans(path, line).iter().any(|(_, d)| d.starts_with(prefix)),
        "{line}: {:?}",
        spans(path, line)
    );
}

/// Asserts that nothing in `line` is redacted.
fn assert_nothing(path: &str, line: &str) {
    assert!(
        values(path, line).is_empty(),
        "{line}: {:?}",
        spans(path, line)
    );
}

/// Each `(path, text, value)`: `value` is one of the spans found in `text`; only found
/// values are returned, so a case can check what else stays readable.
#[track_caller]
fn assert_finds<'a>(cases: &[(&str, &'a str, &str)]) -> Vec<(&'a str, Vec<String>)> {
    cases
        .iter()
        .map(|&(path, text, value)| {
            let found = values(path, text);
            assert!(found.iter().any(|v| v == value), "{text}: {found:?}");
            (text, found)
        })
        .collect()
}

#[test]
fn findings_are_sorted_disjoint_and_on_char_boundaries() {
    let text = "пароль = \"сек рет\"\nDB_PASSWORD=hunter2!x\nemail jane@acme-corp.com\n";
    let d = Detector::new();
    let f = d.detect(
        text,
        &DetectContext {
            rel_path: ".env",
            prose: false,
        },
    );
    assert!(!f.is_empty());
    for w in f.windows(2) {
        assert!(w[0].end <= w[1].start);
    }
    for x in &f {
        assert!(text.is_char_boundary(x.start) && text.is_char_boundary(x.end));
    }
}

/// Generated texts that put multi-byte characters right against every key form the
/// structural scan reads around (declarations, name/value pairs, block scalars,
/// variable blocks): no panic, and every finding on character boundaries.
#[test]
fn key_forms_next_to_multibyte_characters_never_panic() {
    let pieces = [
        "password",
        "api_key",
        "name",
        "value",
        "Name",
        "Value",
        "default",
        "variable",
        "token",
        ":",
        "=",
        " = ",
        ": ",
        ":=",
        ".=",
        "[]",
        "[8]",
        "#define ",
        "var ",
        "const ",
        ": string = ",
        ": &'static str = ",
        "|",
        ">-",
        "{",
        "}",
        "\"",
        "'",
        " ",
        "\t",
        "\n",
        "\n  ",
        "- ",
        "…",
        "é",
        "пароль",
        "密码",
        "ſ",
        "🙂",
        "q8Zr2mW7xK4pL9sT",
        "\\",
    ];
    let d = Detector::new();
    let mut findings = 0;
    for (n, text) in crate::engine::testgen::texts(&pieces, 12_000, 14, 29)
        .iter()
        .enumerate()
    {
        let path = ["a.go", "a.yaml", "main.tf", "a.ts", ".env", "a.c"][n % 6];
        let f = d.detect(
            text,
            &DetectContext {
                rel_path: path,
                prose: false,
            },
        );
        for x in &f {
            assert!(
                text.is_char_boundary(x.start) && text.is_char_boundary(x.end),
                "{path}: {text:?}"
            );
        }
        findings += f.len();
    }
    assert!(findings > 60, "only {findings} findings");
}

// ---- S1 private keys -------------------------------------------------------------

fn pem(label: &str) -> String {
    // A private key's DER opens with its version INTEGER; a certificate's with the
    // nested SEQUENCE of its signed part.
    let first = if label == "CERTIFICATE" {
        "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n"
    } else {
        "MIIEowIBAAKCAQEAq1w8mJ3kQ7bX9fZ2Lr5Tn0sVy4Wc6Hd8Ge1Pa3Ku7Mi9Ob2Nj\n"
    };
    let body = "q1w8mJ3kQ7bX9fZ2Lr5Tn0sVy4Wc6Hd8Ge1Pa3Ku7Mi9Ob2NjMIEowIBAAKCAQEA\n".repeat(4);
    format!("-----BEGIN {label}-----\n{first}{body}-----END {label}-----\n")
}

#[test]
fn s1_pem_blocks_are_redacted_whole() {
    for label in [
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
    ] {
        let text = format!("key:\n{}done", pem(label));
        let got = spans("k.txt", &text);
        assert_eq!(got.len(), 1, "{label}: {got:?}");
        assert!(
            got[0].0.starts_with("-----BEGIN") && got[0].0.ends_with("KEY-----"),
            "{label}"
        );
    }
    // Inside a string literal with escaped newlines.
    let escaped = pem("RSA PRIVATE KEY").replace('\n', "\\n");
    let text = format!("const k = \"{escaped}\";");
    assert_eq!(spans("a.go", &text)[0].1, "S1.pem");
}

#[test]
fn s1_a_block_ends_before_the_next_begin_line() {
    // A key without its END line, then a certificate: the key's block stops at the
    // certificate, which stays readable.
    let key = pem("RSA PRIVATE KEY");
    let key = key.split("-----END").next().unwrap();
    let cert = pem("CERTIFICATE");
    let text = format!("{key}{cert}");
    let got = spans("bundle.pem", &text);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].0.starts_with("-----BEGIN RSA") && !got[0].0.contains("CERTIFICATE"));
    // BEGIN lines one after another are no block at all (no body between them).
    let begins = "-----BEGIN RSA PRIVATE KEY-----\n".repeat(2000);
    assert!(spans("k.txt", &begins).is_empty());
}

/// A key shown in part (whole body lines, then an ellipsis) is key material, in a
/// document and in a string literal; a stub with no whole body line is not.
#[test]
fn s1_a_key_cut_short_with_an_ellipsis_is_still_a_key() {
    let line = "MIIEowIBAAKCAQEAq1w8mJ3kQ7bX9fZ2Lr5Tn0sVy4Wc6Hd8Ge1Pa3Ku7Mi9Ob2Nj";
    let lines = format!("{line}\n").repeat(3);
    for (path, text) in [
        (
            "notes.md",
            format!(
                "Old key (first lines):\n\n-----BEGIN RSA PRIVATE KEY-----\n{lines}...\n\nMore.\n"
            ),
        ),
        (
            "k.py",
            format!("KEY = \"\"\"-----BEGIN RSA PRIVATE KEY-----\n{lines}...\"\"\"\n"),
        ),
        (
            "k.txt",
            format!("-----BEGIN RSA PRIVATE KEY-----\n{lines}…\n-----END RSA PRIVATE KEY-----\n"),
        ),
    ] {
        let got = values(path, &text);
        assert!(
            got.iter().any(|v| v.matches(line).count() == 3),
            "{path}: {got:?}"
        );
    }
    let stub =
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpQIBAAKCAQEAuyf...\n...\nMIIEpQIBAAKCAQEAuyf\n";
    assert!(spans("doc.md", stub).is_empty());
}

#[test]
fn s1_public_material_and_stubs_stay_readable() {
    let cert = pem("CERTIFICATE");
    assert!(spans("c.pem", &cert).is_empty());
    let stub =
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpQIBAAKCAQEAuyf...\n-----END RSA PRIVATE KEY-----";
    assert!(spans("doc.md", stub).is_empty());
}

#[test]
fn s1_jwk_private_members_putty_age_and_base64_pem() {
    let jwk = r#"{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4","e":"AQAB","d":"X4cTteJY_gn4FYPsXB8rdXix5vwsg1FLN5E3EaG6RJoVH-HLLKD9M7dx5oo7GURknchnrRweUkC7hT5fJLM0WbFAKNLWY2vv7B6NqXSzUvxT0_YSfqijwp3RTzlBaCxWp4doFk5N2o8Gy_nHNKroADIkJ46pRUohsXywbReAdYaMwFs9tv8d_cPVY3i07a3t8MN6TNwm0dSawm9v47UiCl3Sk5ZiG7xojPLu4sbg1U2jx4IBTNBznbJSzFHK66jT8bgkuqsk0GjskDJk19Z4qwjwbsnn4j2WBii3RL-Us2lGVkY8fkFzme1z0HbIkfz0Y6mqnOYtqc0X4jfcKoAC8Q","p":"83i-7IvMGXoMXCskv73TKr8637FiO7Z27zv8oj6pbWUQyLPQBQxtPVnwD20R-60eTDmD2ujnMt5PoqMrm8RfmNhVWDtjjMmCMjOpSXicFHj7XOuVIYQyqVWlWEh6dN36GVZYk93N8Bc9vY41xy8B9RzzOGVQzXvNEvn7O0nVbfs"}"#;
    let got = spans("jwk.json", jwk);
    let dets: Vec<_> = got.iter().map(|(_, d)| *d).collect();
    assert!(
        dets.iter().filter(|d| **d == "S1.jwk").count() == 2,
        "{got:?}"
    );
    assert!(
        !got.iter().any(|(v, _)| v.starts_with("0vx7")),
        "public modulus stays"
    );
    let putty = "PuTTY-User-Key-File-3: ssh-ed25519\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5\nAAAAIH\nPrivate-Lines: 1\nAAAAIGZvb2Jhcg\nPrivate-MAC: 9f1e\n";
    assert!(
        spans("id.ppk", putty)
            .iter()
            .any(|(v, d)| *d == "S1.putty" && v.contains("AAAAIGZvb2Jhcg"))
    );
    let age = "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ";
    assert!(
        spans("k.txt", age)
            .iter()
            .any(|(_, d)| *d == "S1.age" || d.starts_with("S2.age"))
    );
    let b64 = "key: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBcTF3OG1KM2tRN2JYOWZaMkxyNVRuMHNWeTRXYzZIZDhHZTFQYTNLdTdNaTlPYjJOagotLS0tLUVORCBSU0EgUFJJVkFURSBLRVktLS0tLQo=";
    assert!(
        spans("values.yaml", b64)
            .iter()
            .any(|(_, d)| *d == "S1.pem-base64"),
        "{:?}",
        spans("values.yaml", b64)
    );
}

// ---- S2 provider tokens (redctx additions) ---------------------------------------

#[test]
fn s2_nkey_seed_jwt_and_twilio() {
    let seed = format!(
        "seed := \"SUA{}\"",
        "D766JUR3TOZZSBMPP5WTQXMTTTERV333OBH34MHGFASPUUKOLZHPH2Q"
    );
    assert_eq!(spans("a.go", &seed)[0].1, "S2.nats-nkey-seed");
    let jwt = "t = eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    let got = spans("a.py", jwt);
    assert_eq!(got.len(), 1);
    assert!(
        got[0].0.starts_with("eyJhbGci") && got[0].0.ends_with("w5c"),
        "{got:?}"
    );
    let sid = "account_sid = 'AC842e83d14fcffa9f23634b6c9f9765d3'";
    assert!(
        spans("a.rb", sid)
            .iter()
            .any(|(v, _)| v == "AC842e83d14fcffa9f23634b6c9f9765d3")
    );
    assert!(
        spans("a.rb", "sid: ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").is_empty(),
        "placeholder SID"
    );
}

// ---- S3 structural ---------------------------------------------------------------

#[test]
fn s3_values_of_sensitive_keys_across_formats() {
    let cases: &[(&str, &str, &str)] = &[
        (".env", "DB_PASSWORD=hunter2!x\n", "hunter2!x"),
        ("config.yml", "redis:\n  password: s3cr3tpw\n", "s3cr3tpw"),
        (
            "app.json",
            r#"{"client_secret": "abcd1234efgh"}"#,
            "abcd1234efgh",
        ),
        (
            "settings.py",
            "SECRET_KEY = 'django-insecure-9x8y7z'\n",
            "django-insecure-9x8y7z",
        ),
        ("main.tf", "password = \"tf-pass-123\"\n", "tf-pass-123"),
        (
            "app.properties",
            "spring.datasource.password=pr0pPass\n",
            "pr0pPass",
        ),
        ("web.xml", "<password>xmlPass99</password>", "xmlPass99"),
        (
            "run.sh",
            "export API_TOKEN='tok_8f7e6d5c'\n",
            "tok_8f7e6d5c",
        ),
        ("deploy.sh", "mysql --password=cliPass77 db\n", "cliPass77"),
        (
            "Main.java",
            "String dbPassword = \"javaPw2024\";",
            "javaPw2024",
        ),
        (
            "main.go",
            "cfg := Config{Password: \"goPass123\"}",
            "goPass123",
        ),
        ("app.rb", "login(user: 'u', password: 'rubyPw1')", "rubyPw1"),
        ("index.php", "$config['db_pass'] = 'phpPass1';", "phpPass1"),
        (
            "a.cs",
            "var conn = \"Server=db;Password=adoPw123;\";",
            "adoPw123",
        ),
        (
            "init.sql",
            "CREATE USER 'u'@'%' IDENTIFIED BY 'sqlPw123';",
            "sqlPw123",
        ),
        (
            "a.yml",
            "tokens: [\"tkA1b2c3d4\", \"tkE5f6g7h8\"]",
            "tkA1b2c3d4",
        ),
        ("de.ini", "passwort = geheim123\n", "geheim123"),
        ("Makefile", "DB_PASSWORD ::= mkPass123\n", "mkPass123"),
        ("build.mk", "API_TOKEN :::= mkTok4567\n", "mkTok4567"),
        (
            "Boot.java",
            "System.setProperty(\"javax.net.ssl.keyStorePassword\", \"ksPw2024x\");",
            "ksPw2024x",
        ),
        (
            "main.go",
            "os.Setenv( \"API_TOKEN\", \"tok9f8e7d6c\")",
            "tok9f8e7d6c",
        ),
        // Declarations with a type between the key and the value.
        (
            "main.go",
            "var apiKey string = \"goKey9f8e7d6c\"",
            "goKey9f8e7d6c",
        ),
        (
            "main.go",
            "var (\n\tclientSecret string = \"goSec9f8e7d6c\"\n)",
            "goSec9f8e7d6c",
        ),
        (
            "a.ts",
            "const apiKey: string = \"tsKey9f8e7d6c\";",
            "tsKey9f8e7d6c",
        ),
        (
            "a.ts",
            "let dbPassword: string | undefined = 'tsPw9f8e7d6c';",
            "tsPw9f8e7d6c",
        ),
        (
            "a.rs",
            "static CLIENT_SECRET: &'static str = \"rsSec9f8e7d6c\";",
            "rsSec9f8e7d6c",
        ),
        (
            "a.py",
            "DB_PASSWORD: Final[str] = \"pyPw9f8e7d6c\"",
            "pyPw9f8e7d6c",
        ),
        (
            "a.py",
            "def connect(password: Dict[str, str] = \"pyDef9f8e7d6c\"):",
            "pyDef9f8e7d6c",
        ),
        (
            "a.kt",
            "private const val API_KEY: String = \"ktKey9f8e7d6c\"",
            "ktKey9f8e7d6c",
        ),
        ("a.c", "#define API_KEY \"cKey9f8e7d6c\"", "cKey9f8e7d6c"),
        ("a.c", "char password[] = \"cPw9f8e7d6c\";", "cPw9f8e7d6c"),
        ("a.php", "$secret .= \"phpSec9f8e7d6c\";", "phpSec9f8e7d6c"),
        // YAML block scalars.
        (
            "a.yaml",
            "db:\n  password: |\n    yamlBlockPw9f8e\n",
            "yamlBlockPw9f8e",
        ),
        (
            "a.yaml",
            "db:\n  api_key: >-  # folded\n    q8Zr2mW7xK4pL9sT\n",
            "q8Zr2mW7xK4pL9sT",
        ),
        // A sensitive name paired with a value.
        (
            "deploy.yaml",
            "env:\n  - name: DB_PASSWORD\n    value: \"k8sEnvPw9f8e\"\n",
            "k8sEnvPw9f8e",
        ),
        (
            "task.json",
            "[{\"name\": \"API_TOKEN\", \"value\": \"ecsTok9f8e7d6c\"}]",
            "ecsTok9f8e7d6c",
        ),
        (
            "stack.yaml",
            "  - Name: API_TOKEN\n    Value: q8Zr2mW7xK4pL9sT\n",
            "q8Zr2mW7xK4pL9sT",
        ),
        (
            "main.tf",
            "env { name = \"DB_PASSWORD\" value = \"hclEnvPw9f8e\" }",
            "hclEnvPw9f8e",
        ),
        (
            "variables.tf",
            "variable \"db_password\" {\n  type    = string\n  default = \"tfDefPw9f8e\"\n}\n",
            "tfDefPw9f8e",
        ),
    ];
    for (path, text, want) in cases {
        let got = values(path, text);
        assert!(got.iter().any(|v| v == want), "{path}: {text:?} -> {got:?}");
        assert!(
            got.iter()
                .all(|v| !v.to_ascii_lowercase().contains("password") || v == want),
            "key kept: {got:?}"
        );
    }
}

#[test]
fn s3_references_and_placeholders_are_not_values() {
    let cases: &[(&str, &str)] = &[
        (".env", "DB_PASSWORD=${DB_PASSWORD}\n"),
        ("a.yml", "password: {{ .Values.db.password }}\n"),
        ("a.yml", "password: <your-password>\n"),
        (".env", "TOKEN=$GITHUB_TOKEN\n"),
        ("a.py", "password = os.getenv('DB_PASSWORD')\n"),
        ("a.js", "const token = process.env.API_TOKEN;\n"),
        ("a.py", "token = self.get_token()\n"),
        ("a.py", "password = password\n"),
        ("a.rb", "def create(password: nil, token: :unset)\n"),
        ("a.json", "{\"password\": null, \"secret\": \"\"}"),
        ("a.yml", "password: changeme\n"),
        ("a.yml", "secret: '********'\n"),
        ("a.py", "password = '%(password)s'\n"),
        ("a.go", "Password string `json:\"password\"`\n"),
        ("a.ts", "password: string;\n"),
        (
            "a.yml",
            "token_type: Bearer\npassword_file: /run/secrets/db\n",
        ),
        ("a.py", "api_key_id = 'abc123def456'\n"),
        (
            "a.cs",
            "public const string ServicePrincipalSecret = \"GCM_AZREPOS_SP_SECRET\";",
        ),
        ("a.go", "\"RedisPassword\": \"session.redis.password\","),
        ("a.json", "\"page_token\": \"PBCPcccccccc1234\""),
        ("a.go", "pw := os.Getenv(\"DB_PASSWORD\")\n"),
        ("a.py", "pw = cfg.get(\"password\", \"\")\n"),
        ("a.py", "pw = os.getenv(\"PASSWORD\", \"changeme\")\n"),
        ("a.java", "props.setProperty(\"db.password\", dbPassword);"),
        (
            "a.js",
            "assert.equal(label, \"password\", \"wrong label\");",
        ),
        (
            "a.go",
            "hash, err := HashPassword(\"password\", \"BpLnfgDsc2WD8F2q\")\n",
        ),
        (
            "a.go",
            "req.Header.Set(\"Sec-Websocket-Key\", \"dGhlIHNhbXBsZSBub25jZQ==\")\n",
        ),
        // Typed names without a value, or whose value is code.
        ("a.ts", "function check(password: string): boolean {\n"),
        ("a.ts", "const token: string = await fetchToken();\n"),
        ("a.py", "def check(password: str) -> bool:\n"),
        ("a.rs", "let api_key: String = env::var(\"API_KEY\")?;\n"),
        ("a.go", "var apiKey string\n"),
        ("a.go", "var apiKey string = os.Getenv(\"API_KEY\")\n"),
        ("a.c", "char password[MAX_LEN];\n"),
        ("a.c", "#define PASSWORD_LEN 64\n"),
        ("a.php", "$token .= $suffix;\n"),
        ("a.ts", "case \"password\": label = \"Passw0rdLabel\";\n"),
        (
            "a.swift",
            "case .password: placeholder = \"Passw0rdHint\"\n",
        ),
        ("a.c", "default: password_len = 64;\n"),
        (
            "a.ts",
            "const ok = { token: limit <= \"q8Zr2mW7xK4pL9sT\" };\n",
        ),
        // Pairs that are not one item.
        (
            "deploy.yaml",
            "  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        key: pw\n  - name: MODE\n    value: fast\n",
        ),
        (
            "login.html",
            "<input name=\"password\">\n<input type=\"submit\" value=\"SignInNow\">",
        ),
        (
            "task.json",
            "{\"name\": \"API_TOKEN\"}, {\"value\": \"q8Zr2mW7xK4pL9sT\"}",
        ),
        (
            "variables.tf",
            "variable \"db_password\" {\n  type = string\n}\nlocals {\n  default = \"q8Zr2mW7xK4pL9sT\"\n}\n",
        ),
    ];
    for (path, text) in cases {
        let got = spans(path, text);
        assert!(got.is_empty(), "{path}: {text:?} -> {got:?}");
    }
}

/// Whether a key sits in a string literal (where bare values are literals) follows the
/// file's language: backticks quote in Go and JavaScript but not in Rust, whose doc
/// comments fence examples with three of them; a Rust lifetime opens no string.
#[test]
fn s3_string_literals_follow_the_languages_quotes() {
    let raw = "const cfg = `\npassword: Xk9mPq2vLw8r\n`\n";
    assert_eq!(values("cfg.go", raw), ["Xk9mPq2vLw8r"]);
    assert_eq!(values("cfg.ts", raw), ["Xk9mPq2vLw8r"]);
    let rust_cases = [
        "/// ```\n/// let colon_token: Option<Token![:]> = input.parse()?;\n/// ```\n",
        "/// ```\n/// password: Xk9mPq2vLw8r\n/// ```\n",
        "fn register(kq: BorrowedFd<'_>, token: usize) {}\n",
        "struct Passwd<'a> { name: &'a str, passwd: CString }\n",
        // A character literal opens and closes: the quote inside it opens nothing.
        "let q = '\"'; let p = Secret { password: Xk9mPq2vLw8r };\n",
    ];
    for text in rust_cases {
        assert_eq!(values("src/lib.rs", text), Vec::<String>::new(), "{text:?}");
    }
    // A key right after a string's opening quote is in that string.
    assert_eq!(
        values("src/lib.rs", "let cfg = \"db_password = Xk9mPq2vLw8r\";\n"),
        ["Xk9mPq2vLw8r"]
    );
    // A configuration snippet in a Rust string is still read as one.
    assert_eq!(
        values(
            "src/lib.rs",
            "let q = 'x'; let cfg = \"user: x\\npassword: Xk9mPq2vLw8r\";\n"
        ),
        ["Xk9mPq2vLw8r"]
    );
}

#[test]
fn a_block_scalar_ends_where_its_keys_siblings_start() {
    let text = "items:\n  - password: |\n      blockPw9f8e7d\n    ref: q8Zr2mW7xK4pL9sT\n";
    assert_eq!(values("a.yaml", text), ["blockPw9f8e7d"]);
}

#[test]
fn s7_weak_keys_need_random_looking_values() {
    assert_eq!(
        values("a.php", "'key' => '6072A3A47E8FF48793DB6F29F3767DAD',"),
        ["6072A3A47E8FF48793DB6F29F3767DAD"]
    );
    assert_eq!(
        values("a.js", "oauth_signature: 'IT81zWqPPtd+pvCER0Ruecvl677=',"),
        ["IT81zWqPPtd+pvCER0Ruecvl677="]
    );
    for text in [
        "Key = \"Laura\",",
        "\"key\": \"Content-Type\",",
        "key: 'foo2',",
        "$key = 'ecdsa-sha2-' . $alias;",
    ] {
        assert!(spans("a.cs", text).is_empty(), "{text}");
    }
}

#[test]
fn s3_a_literal_compared_with_a_secret_is_the_secret() {
    // JavaScript/TypeScript/PHP strict comparisons, either sense.
    assert_redacts(
        "a.ts",
        "if (req.body.password === 'Qx7!rT9#mK2p') {",
        "Qx7!rT9#mK2p",
    );
    assert_redacts(
        "a.js",
        "return user.apiToken !== \"tk_83hd9Qm2\";",
        "tk_83hd9Qm2",
    );
    assert_redacts(
        "a.php",
        "if ($input->password === 'admin123') {",
        "admin123",
    );
    // A kind check, a sentinel word or an expression is not a value.
    for text in [
        "if (typeof this.password === 'function') {",
        "if (config.sessionSecret === 'MEAN') {",
        "if ($scope.formModel.password !== 'admin') {",
        "if (password === confirmPassword) {",
        "if (token === undefined) {",
    ] {
        assert_nothing("a.ts", text);
    }
}

#[test]
fn s3_key_material_decoded_from_a_literal() {
    // A setter or key taking an encoded literal through a decode call, per language.
    assert_finds(&[
        (
            "ShiroConfig.java",
            "manager.setCipherKey(Base64.decode(\"8CfGfkNHYm6ERR9Vspxqeq==\"));",
            "8CfGfkNHYm6ERR9Vspxqeq==",
        ),
        (
            "A.java",
            "manager.setCipherKey(Base64.getDecoder().decode(\"kPH+bIxk5D2deZiIxcaaaA==\"));",
            "kPH+bIxk5D2deZiIxcaaaA==",
        ),
        (
            "a.py",
            "SECRET_KEY = base64.b64decode('c2VjcmV0LWtleS0xMjM0NTY3ODkw')",
            "c2VjcmV0LWtleS0xMjM0NTY3ODkw",
        ),
        (
            "a.go",
            "signingKey, _ := hex.DecodeString(\"9f8e7d6c5b4a39281706f5e4d3c2b1a0\")",
            "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        ),
        (
            "a.cs",
            "var encryptionKey = Convert.FromBase64String(\"q83vEjRWeJq83vEjRWeJqw==\");",
            "q83vEjRWeJq83vEjRWeJqw==",
        ),
    ]);
    // A decode of a looked-up value names nothing.
    assert_nothing(
        "A.java",
        "manager.setCipherKey(Base64.decode(props.get(\"cipher\")));",
    );
}

#[test]
fn s3_builder_steps_dockerfile_env_and_go_byte_conversions() {
    assert_redacts(
        "a.java",
        "Client c = Client.builder().user(\"svc\").password(\"Tr0ub4dor&3z\").build();",
        "Tr0ub4dor&3z",
    );
    assert_redacts(
        "a.kt",
        "val c = Config.Builder().apiKey(\"q8Zp2Lm9Xw4Rt7Yv\").build()",
        "q8Zp2Lm9Xw4Rt7Yv",
    );
    // A step that computes or looks up names nothing.
    for text in [
        "String h = encoder.hashPassword(\"Tr0ub4dor&3z\");",
        "String t = vault.getToken(\"service-account\");",
        "assert.equal(form.password(\"x\"), true);",
    ] {
        assert_nothing("a.java", text);
    }
    assert_redacts(
        "Dockerfile",
        "ENV API_TOKEN Zq8w2Lk9Pm4Rt7Yv",
        "Zq8w2Lk9Pm4Rt7Yv",
    );
    assert_nothing("Dockerfile", "ENV API_TOKEN_FILE /run/secrets/token");
    assert_nothing("notes.md", "Set API_TOKEN in your shell first.");
    assert_redacts(
        "a.go",
        "var signingKey = []byte(\"k8Jq2LmZp0Xw4Rt7uY6\")",
        "k8Jq2LmZp0Xw4Rt7uY6",
    );
    assert_redacts(
        "a.go",
        "hmacKey := []byte(\"k8Jq2LmZp0Xw4Rt7uY6\")",
        "k8Jq2LmZp0Xw4Rt7uY6",
    );
}

#[test]
fn s3_fill_patterns_and_permission_levels_are_not_tokens() {
    for text in [
        "return dict(key=\"asdf\", secret=\"qwer\")",
        "self.write(\"oauth_token=zxcv&oauth_token_secret=1234\")",
        "def __init__(self, cookie_secret=\"0123456789\"):",
        "url = \"https://example.test/feed?token=abc123\"",
        "\"secrets\": \"read\",",
        "OrganizationSecrets: String(\"write\"),",
    ] {
        assert_nothing("a.py", text);
    }
    // A password may be any of these, and a token that merely starts like one is kept.
    assert_redacts("a.py", "password = \"qwerty\"", "qwerty");
    assert_redacts(
        "a.py",
        "api_token = \"asdf8Kq2Lm9Zp0Xw\"",
        "asdf8Kq2Lm9Zp0Xw",
    );
}

#[test]
fn s3_public_key_tokens_prose_about_flags_and_literals_ending_at_the_separator() {
    for (path, text) in [
        (
            "App.config",
            "<section type=\"X, Version=4.0.0.0, Culture=neutral, PublicKeyToken=b77a5c561934e089\" />",
        ),
        (
            "a.go",
            "wantKey := PublicKey{Key: \"x\"}; public_key = \"MIIBIjANBgkqhkiG9w0BAQ\"",
        ),
        (
            "README.md",
            "The --password flag may be used to encrypt the document.",
        ),
        (
            "A.cs",
            "sb.Append(\"password=\").Append(Password).Append(\"\\n\");",
        ),
    ] {
        assert_nothing(path, text);
    }
    // The values these forms resemble are still found.
    assert_redacts(
        "A.cs",
        "var cs = \"password=Xk29fjq9aa;Server=db\";",
        "Xk29fjq9aa",
    );
    assert_redacts(
        "run.sh",
        "tool --password Xk29fjq9aa --verbose",
        "Xk29fjq9aa",
    );
}

#[test]
fn s3_php_serialized_values_are_read_by_their_length() {
    let text = r#"a:3:{s:6:"app_id";s:18:"wx4f8a9c2d1e7b3a6c";s:15:"paypal_password";s:16:"JZ4JHPQKXB5YLMJD";s:4:"lang";s:5:"en_US";}"#;
    assert_eq!(
        values("m.php", text),
        ["wx4f8a9c2d1e7b3a6c", "JZ4JHPQKXB5YLMJD"]
    );
    // A private key's body over several lines, read whole because the length says so.
    let body = "MIIEpAIBAAKCAQEAwJ4mV9Hkq1c2ZbU8f3Lr9XyTnQpWmE7sRdK0aGhC5vYxB2jN\n\
                8uPzS6tLqF1oHrM3eWkD4cIbA7gVnJyX0ZsKpQ5RdT2LmE9hUfC6oWvBzN1aYjGx";
    let text = format!(r#"s:15:"rsa_private_key";s:{}:"{body}";"#, body.len());
    assert_eq!(values("m.php", &text), [body]);
    // A length that does not hold is not PHP's format: nothing is read by it.
    assert_nothing(
        "m.php",
        r#"s:15:"paypal_password";s:99:"JZ4JHPQKXB5YLMJD";"#,
    );
}

#[test]
fn s3_keys_joined_to_a_key_material_word() {
    assert_redacts(
        "Mimikatz.md",
        "dpapi::cred /in:C:\\x\\Credentials\\2647 /masterkey:57194475d74ff0fb2a7c1033e725b486",
        "57194475d74ff0fb2a7c1033e725b486",
    );
    assert_redacts("a.yml", "aeskey: 'bQ9x2LkPz0Vw7RtY'", "bQ9x2LkPz0Vw7RtY");
    // `key` joined to a role or an ordinary word is not key material.
    for text in [
        "monkey: 'Bobo the monkey'",
        "hotkey: 'ctrl+shift+k'",
        "userkey: 'name'",
    ] {
        assert_nothing("a.yml", text);
    }
}

#[test]
fn s7_an_application_id_is_taken_only_when_random() {
    for (path, text) in [
        (
            "a.py",
            "conf = WechatConf(appid='wx4f8a9c2d1e7b3a6c', token='x')",
        ),
        ("a.js", "const appId = \"wx4f8a9c2d1e7b3a6c\";"),
        ("a.yml", "wechat_service_app_id: wx4f8a9c2d1e7b3a6c"),
    ] {
        assert_redacts(path, text, "wx4f8a9c2d1e7b3a6c");
    }
    for text in [
        "app_id: my-application",
        "appId: 'com.example.app'",
        "APP_ID = 'APP_ID'",
        "appid = None",
    ] {
        assert_nothing("a.py", text);
    }
}

#[test]
fn s3_passwords_of_a_few_words_but_not_labels() {
    for (path, text, value) in [
        ("a.py", "auth_password = \"open sesame\"", "open sesame"),
        ("users.yml", "password: 'Zt. H33hwkl'", "Zt. H33hwkl"),
        (
            "A.cs",
            "viewModel.Password = \"correct horse battery\";",
            "correct horse battery",
        ),
        // Quotes escaped inside the string are part of the password.
        (
            "run.ps1",
            "tool.exe -username=corp\\sam -password=\"dmb \\\"vg-mn-shyz\\\"\"",
            "dmb \\\"vg-mn-shyz\\\"",
        ),
        (
            "Conf.java",
            "conf.setPassword(\"ab \\\"cd\\\" 77\");",
            "ab \\\"cd\\\" 77",
        ),
    ] {
        assert_redacts(path, text, value);
    }
    for text in [
        // An escaped quote does not make a message a password.
        "password: \"Field \\\"%s\\\" is required\"",
        "password: \"the \\\"{name}\\\" one\"",
        "password: 'Enter your password'",
        "password: 'Mot de passe'",
        "password: 'Change Password'",
        "password: 'Passwords do not match.'",
        "password: 'Secret Agent'",
        "password: 'must be at least 8 characters'",
        "password: 'one two three four five'",
        "password: '%s is invalid'",
    ] {
        assert_nothing("a.yml", text);
    }
    // Only passwords: a token or key with a space is a sentence.
    assert_nothing("a.yml", "token: 'some words here'");
}

// ---- S4 URLs, S5 HTTP auth, S6 hashes, S8 encodings -------------------------------

#[test]
fn s4_url_credentials_and_connection_files() {
    assert_eq!(
        values(
            "a.py",
            "DB = 'postgres://app:Pg-Pass-77@db.internal:5432/app'"
        ),
        ["Pg-Pass-77"]
    );
    assert_eq!(
        values(
            "a.go",
            "nats.Connect(\"nats://user:natspw1@10.0.0.5:4222\")"
        ),
        ["natspw1", "10.0.0.5"]
    );
    assert!(values("a.py", "u = 'https://user:%s@host.com'").is_empty());
    assert!(
        values("doc.md", "https://john:letmein1@proxy.example.com").is_empty(),
        "documentation host"
    );
    assert_eq!(
        values(
            ".netrc",
            "machine api.corp.io login bob password nEtRcPw1\n"
        ),
        ["nEtRcPw1"]
    );
    assert_eq!(
        values(".pgpass", "db.corp.io:5432:app:bob:pgPassW0rd\n"),
        ["pgPassW0rd"]
    );
    let hook = "https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcdEFGH";
    assert!(
        spans("a.txt", hook)
            .iter()
            .any(|(_, d)| *d == "S4.discord-webhook")
    );
}

#[test]
fn s4_a_url_naming_its_fields_is_not_a_credential() {
    for text in [
        "parse('pg://user:pass@localhost/dbname')",
        "Transforms 'postgres://DBuser:secret@DBHost:5432/myDB' into",
        "node: 'https://username:password@localhost:9200'",
        "FTP = 'ftp://myname:passwd@files.corp.io/x'",
    ] {
        let found = values("a.js", text);
        assert!(
            !found
                .iter()
                .any(|v| ["pass", "secret", "password", "passwd"].contains(&v.as_str())),
            "{text}: {found:?}"
        );
    }
    // A password word after a real user's name is that user's password.
    for (text, secret) in [
        (
            "nats.Connect(\"nats://ivan:password@10.0.0.5:4222\")",
            "password",
        ),
        (
            "new Client('postgres://user:S3cr3t-77@db.corp.io/x')",
            "S3cr3t-77",
        ),
        ("'amqp://guest2:pass@mq.corp.io:5672'", "pass"),
    ] {
        assert!(values("a.js", text).contains(&secret.to_owned()), "{text}");
    }
}

#[test]
fn s5_http_authorization_material() {
    assert_eq!(
        values("a.js", "headers: 'Authorization: Bearer wfotxqailfeus5a8'"),
        ["wfotxqailfeus5a8"]
    );
    assert_eq!(
        values("a.js", "'Proxy-Authorization': 'Basic dXNlcjpwYXNz',"),
        ["dXNlcjpwYXNz"]
    );
    let curl = values("a.sh", "curl -u admin:curlPw99 https://api.corp.io");
    assert!(curl.len() == 1 && curl[0].ends_with("curlPw99"), "{curl:?}");
    assert_eq!(
        values(
            "c.yml",
            "- tesla-auth.sid=b%3AUeorWOXJovVXappOh2ERTYTNzi_x2HMX;"
        ),
        ["b%3AUeorWOXJovVXappOh2ERTYTNzi_x2HMX"]
    );
    for text in [
        "Use Bearer tokens for auth.",
        "WWW-Authenticate: Basic realm=\"x\"",
        "'Bearer ' + token",
        "Authorization: Bearer vp7jx...",
    ] {
        assert!(spans("a.md", text).is_empty(), "{text}");
    }
}

#[test]
fn s5_password_of_an_http_client_auth_pair() {
    let found = assert_finds(&[
        (
            "client.py",
            "r = requests.get(url, auth=(\"svc_reporting\", \"Xq7!vR2#pLm9\"))",
            "Xq7!vR2#pLm9",
        ),
        (
            "client.py",
            "session.auth = ('admin', 'hunter2hunter2')",
            "hunter2hunter2",
        ),
        (
            "client.py",
            "requests.post(url, auth=HTTPBasicAuth(\"deploy\", \"Tr0ub4dor&3x\"))",
            "Tr0ub4dor&3x",
        ),
        (
            "client.py",
            "auth = aiohttp.BasicAuth(\n    \"ci\",\n    \"q9w8e7r6\",\n)",
            "q9w8e7r6",
        ),
        (
            "README.md",
            "httpx.get(url, auth=[\"u\", \"p4ssw0rd!\"])",
            "p4ssw0rd!",
        ),
    ]);
    for (text, values) in found {
        // The user name stays readable.
        assert!(
            !values.iter().any(|v| v.contains("svc_") || v == "admin"),
            "{text}: {values:?}"
        );
    }
    for text in [
        "requests.get(url, auth=(user, password))",
        "requests.get(url, auth=(\"user\", os.environ[\"PW\"]))",
        "requests.get(url, auth=(\"user\", \"${API_PASSWORD}\"))",
        "requests.get(url, auth=(\"user\", \"<password>\"))",
        "router.auth(\"admin\", \"/login\")",
        "t.auth(\"title\", \"Sign in to continue\")",
    ] {
        assert!(spans("client.py", text).is_empty(), "{text}");
    }
}

#[test]
fn s5_password_given_to_a_credential_type_or_login_call() {
    assert_finds(&[
        (
            "Creds.cs",
            "var creds = new NetworkCredential(\"svc-build\", \"Bu1ld!Pass#9\");",
            "Bu1ld!Pass#9",
        ),
        (
            "Client.java",
            "new UsernamePasswordCredentials(\"jenkins\", \"J3nk1ns!x\")",
            "J3nk1ns!x",
        ),
        (
            "mail.py",
            "server.login(\"alerts@acme-corp.com\", \"gmailAppPw77x\")",
            "gmailAppPw77x",
        ),
        (
            "backup.py",
            "ftp.login('backup', 'Ftp!Pass2024')",
            "Ftp!Pass2024",
        ),
        (
            "Creds.cs",
            "new NetworkCredential(\"ops\", \"plainword\")",
            "plainword",
        ),
        // The user by name, Java's char arrays, Spring's token, one-argument types.
        (
            "Client.java",
            "new UsernamePasswordCredentials(user, \"Kp8sVt2wQz\")",
            "Kp8sVt2wQz",
        ),
        (
            "Proxy.java",
            "return new PasswordAuthentication(\"bob\", \"Gh5jKl8mNb\".toCharArray());",
            "Gh5jKl8mNb",
        ),
        (
            "Jaas.java",
            "new PasswordCredential(this.user, \"Tr0ub4dor&3xyz\".toCharArray())",
            "Tr0ub4dor&3xyz",
        ),
        (
            "AuthTest.java",
            "new UsernamePasswordAuthenticationToken(\"admin\", \"Adm1n-Pw-77\")",
            "Adm1n-Pw-77",
        ),
        (
            "login.js",
            "const c = new PasswordCredential(\"Tr0ub4dor&3xyz\");",
            "Tr0ub4dor&3xyz",
        ),
    ]);
    for text in [
        // A login call's second word must look like a password.
        "router.login(\"admin\", \"home\")",
        "ui.login(\"Welcome\", \"Sign in\")",
        "client.login(user, password)",
        "client.login(\"user\", os.environ[\"PW\"])",
        "new NetworkCredential(\"user\", \"${PASSWORD}\")",
        // A user given by name: the literal must look like a password too.
        "provider.getCredentials(scope, \"github\")",
        "loadCredentials(env, \"default\")",
        // One argument: only a password credential's.
        "new AwsCredential(\"Tr0ub4dor&3xyz\")",
        "new PasswordCredential(formElement)",
    ] {
        assert!(spans("client.py", text).is_empty(), "{text}");
    }
}

#[test]
fn s5_jdbc_passwords_and_jwt_signing_keys() {
    assert_finds(&[
        (
            "Db.java",
            "Connection c = DriverManager.getConnection(\"jdbc:mysql://db/app\", \"root\", \"J4vaRootPw!\");",
            "J4vaRootPw!",
        ),
        (
            "Db.java",
            "DriverManager.getConnection(DB_URL, \"app\", \"s3cr3tPw\")",
            "s3cr3tPw",
        ),
        (
            "auth.py",
            "token = jwt.encode(payload, \"my-hs256-signing-key-9f8e7d\", algorithm=\"HS256\")",
            "my-hs256-signing-key-9f8e7d",
        ),
        (
            "auth.js",
            "const t = jwt.sign(claims, 'n0de-jwt-Secret!');",
            "n0de-jwt-Secret!",
        ),
        (
            "auth.py",
            "data = jwt.decode(token, \"verify-Key-2024\", algorithms=[\"HS256\"])",
            "verify-Key-2024",
        ),
    ]);
    for text in [
        "DriverManager.getConnection(url, user, password)",
        "DriverManager.getConnection(url, \"app\", System.getenv(\"DB_PW\"))",
        "jwt.encode(payload, SECRET_KEY, algorithm=\"HS256\")",
        "jwt.encode({\"sub\": \"x\", \"role\": \"admin\"}, key)",
        "jwt.sign(claims, process.env.JWT_SECRET)",
    ] {
        assert!(spans("auth.py", text).is_empty(), "{text}");
    }
}

#[test]
fn s6_password_hashes() {
    let bcrypt = "$2a$10$LoRPzN3GtF2pNX5QgCBBHeUr6/zVN./RVGOu5U8SpHyg2sfzvfXji";
    assert_eq!(
        spans("users.txt", &format!("alice:{bcrypt}\n"))[0],
        (bcrypt.to_owned(), "S6.password-hash")
    );
    let argon = "$argon2id$v=19$m=65536,t=3,p=2$BpLnfgDsc2WD8F2q$o/vzA4myCqZZ36bUGsDY//8mKUYNZZaR0t4MFFSs+iM";
    assert_eq!(values("a.txt", argon), [argon]);
    let shadow = "root:$6$rounds=5000$saltsalt$Hq3yv9bJ0qJ6E3rYf1kz7o8zq2Zk1fX0u4p5d6s7a8q9w0e1r2t3y4u5i6o7p8a9s0d1f2g3h4j5k6l7z8x9c0:19000:0:99999:7:::";
    assert!(
        spans("shadow", shadow)
            .iter()
            .any(|(v, _)| v.starts_with("$6$"))
    );
}

#[test]
fn s8_encoded_secrets_are_found_through_decoding() {
    // base64 of "password=Sup3rS3cret!" inside an unrelated value.
    let text = "blob: cGFzc3dvcmQ9U3VwM3JTM2NyZXQh\n";
    assert!(
        spans("a.yml", text).iter().any(|(_, d)| *d == "S8.base64"),
        "{:?}",
        spans("a.yml", text)
    );
    let k8s = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  username: YWRtaW4=\n  blob: c29tZXRoaW5n\n";
    assert!(
        spans("secret.yaml", k8s)
            .iter()
            .any(|(v, d)| *d == "S8.k8s-secret-data" && v == "c29tZXRoaW5n")
    );
}

// ---- PII and readability ---------------------------------------------------------

#[test]
fn pii_categories_are_reported() {
    let d = Detector::new();
    let text =
        "Signed-off-by: Jane Doe <jane.doe@acme-corp.com>\ncard 4111-1111-1111-1111 ip 10.1.2.3\n";
    let cats: Vec<&str> = d
        .detect(
            text,
            &DetectContext {
                rel_path: "NOTES",
                prose: true,
            },
        )
        .iter()
        .map(|f| f.category.as_str())
        .collect();
    for c in ["PERSON", "EMAIL", "CARD", "IP"] {
        assert!(cats.contains(&c), "{c} in {cats:?}");
    }
}

#[test]
fn readable_things_stay_readable() {
    let cases: &[(&str, &str)] = &[
        ("a.txt", "commit 3f786850e387550fdab836ed7e6dc881de23001b\n"),
        ("a.go", "id := \"550e8400-e29b-41d4-a716-446655440000\"\n"),
        (
            "package-lock.json",
            "\"integrity\": \"sha512-Z1ZkbXlKUnNnSWx1dGhlbGF6eWRvZ3d0aGVxdWlja2Jyb3duZm94anVtcHNvdmVydGhl==\",\n",
        ),
        (
            "Cargo.lock",
            "checksum = \"4fa78e18c64fce05e902adecd7a5eed15a5e0a3439f7b0e169f0252214865e3d\"\n",
        ),
        ("a.py", "__version__ = '1.2.3.4'\nVERSION = \"v10.0.0.1\"\n"),
        ("a.c", "#define ADDR \"127.0.0.1\"\nbind(\"0.0.0.0\")\n"),
        (
            "a.md",
            "see https://docs.rs/regex/latest/regex/ and example@example.com\n",
        ),
        ("a.rb", "API_VERSION = '2010-04-01'\n"),
    ];
    for (path, text) in cases {
        let got = spans(path, text);
        assert!(got.is_empty(), "{path}: {text:?} -> {got:?}");
    }
}

/// The gate words the detector reports for the pipeline are exactly those the text holds
/// (up to ASCII case), and unknown when a character folds onto an ASCII letter; so are
/// the starts of the secret stages' literals, and of the configured terms' and the allow
/// list's first words.
#[test]
fn reported_gate_words_are_those_the_text_holds() {
    let pieces = [
        "Api",
        "pwd",
        "PASSW",
        "ci/cd",
        "MAY",
        "load",
        "akia",
        "xoxb-",
        "ghp",
        "Bearer",
        "secrets",
        "GLOBEX",
        "Jane",
        "zoë",
        "salt",
        "SALT",
        "sa",
        "lt",
        "http://x.internal",
        "WWW.",
        "ww",
        "[SECRET_",
        "[person_",
        "sk-",
        "ſ",
        "-----BEGIN",
        "://",
        ".corp",
        "token = abc",
        "é",
        " ",
        "\n",
    ];
    let d = Detector::new();
    let ctx = DetectContext {
        rel_path: "x.txt",
        prose: false,
    };
    // Configured terms' first words: new words, and one a family registers too; the
    // allow list's: one a term shares, one a family registers, and new ones.
    let terms = ["Globex", "jane", "token", "JANE"];
    let allow = ["globex", "Api", "CI/CD", "ad", "May"];
    let with_terms = Detector::locating(
        terms.iter().copied().chain(["Zoë"]),
        allow.iter().copied().chain(["Zoë"]),
    );
    let (mut unknown, mut located, mut term_located, mut allow_located) = (0, 0, 0, 0);
    for text in crate::engine::testgen::texts(&pieces, 600, 12, 23) {
        let (_, seen) = d.detect_and_see(&text, &ctx, true);
        let expected = crate::engine::stages::patterns::tests::gate_words_in(&text);
        assert_eq!(seen.words, expected, "in {text:?}");
        let starts = crate::engine::stages::patterns::tests::secret_literal_starts_in(&text);
        assert_eq!(seen.secret_literal_starts, starts, "in {text:?}");
        located += seen.secret_literal_starts.is_some_and(|s| s.len() > 1) as usize;
        assert_eq!(seen.term_starts, None, "no terms to locate");
        assert_eq!(seen.allow_starts, None, "no allow list to locate");
        let (_, seen) = with_terms.detect_and_see(&text, &ctx, false);
        assert_eq!(seen.secret_literal_starts, None, "not asked for");
        let starts = crate::engine::stages::patterns::tests::literal_starts_in(&text, &terms);
        assert_eq!(seen.term_starts, starts, "in {text:?}");
        term_located += seen.term_starts.is_some_and(|s| s.len() > 1) as usize;
        let starts = crate::engine::stages::patterns::tests::literal_starts_in(&text, &allow);
        assert_eq!(seen.allow_starts, starts, "in {text:?}");
        allow_located += seen.allow_starts.is_some_and(|s| s.len() > 1) as usize;
        unknown += usize::from(seen.words == crate::engine::prepass::GateWords::UNKNOWN);
    }
    assert!(unknown > 0 && unknown < 600, "{unknown} unknown");
    assert!(
        located > 100,
        "{located} texts with several secret literals"
    );
    assert!(
        term_located > 50,
        "{term_located} texts with several term words"
    );
    assert!(
        allow_located > 50,
        "{allow_located} texts with several allow words"
    );
}

/// A family added to the built-in set: ticket keys (`OPS-1234`), found from the word
/// `ops-` located by the shared keyword pass, at a priority below the built-in secrets.
struct TicketKeys;

impl family::Family for TicketKeys {
    fn name(&self) -> &'static str {
        "X1 ticket keys"
    }

    fn words(&self) -> Vec<&str> {
        vec!["ops-"]
    }

    fn scan(&self, f: &family::Facts, words: WordIds, out: &mut family::Sink) {
        for start in f.hits.starts_of(words, 0) {
            let digits = f.text.as_bytes()[start + 4..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits > 0 && f.text.as_bytes()[start..start + 4].eq_ignore_ascii_case(b"ops-") {
                out.candidates.push(Candidate {
                    start,
                    end: start + 4 + digits,
                    category: Category::SENSITIVE,
                    detector: "X1.ticket",
                    priority: prio::GENERIC,
                });
            }
        }
    }
}

#[test]
fn an_added_family_is_located_by_the_shared_pass_and_resolved_with_the_built_ins() {
    let ctx = DetectContext {
        rel_path: "notes.md",
        prose: true,
    };
    let text = "Fixed in ops-4411 and OPS-7.\npassword = \"ops-9911Zq!xT2\"\nops- alone\n";
    let built_in = Detector::new();
    let extended = built_in
        .with_extra(vec![Arc::new(TicketKeys)])
        .expect("one more word fits");
    let found: Vec<_> = extended
        .detect(text, &ctx)
        .into_iter()
        .map(|f| (&text[f.start..f.end], f.detector))
        .collect();
    // Both tickets in prose are found; inside the password value the built-in
    // assignment rule is more specific and keeps the whole value.
    assert!(found.contains(&("ops-4411", "X1.ticket")), "{found:?}");
    assert!(found.contains(&("OPS-7", "X1.ticket")), "{found:?}");
    assert!(
        found
            .iter()
            .any(|(v, d)| *v == "ops-9911Zq!xT2" && d.starts_with("S3")),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|(v, _)| v.starts_with("ops- ")),
        "{found:?}"
    );
    // The built-in set is unchanged by the extension.
    assert!(
        built_in
            .detect(text, &ctx)
            .iter()
            .all(|f| f.detector != "X1.ticket")
    );
}

/// SQL's password clauses, from each dialect's grammar: PostgreSQL roles, SQL Server
/// logins, MySQL `SET PASSWORD`, Oracle's unquoted `IDENTIFIED BY`.
#[test]
fn sql_password_clauses_are_redacted_in_every_dialect() {
    let cases = [
        (
            "schema.sql",
            "CREATE USER blog WITH PASSWORD 'Bl0gPass';",
            "Bl0gPass",
        ),
        (
            "init.sql",
            "CREATE ROLE scram_test login password 'qqjw4sidtu';",
            "qqjw4sidtu",
        ),
        (
            "a.sql",
            "ALTER ROLE app WITH PASSWORD 'Xk29fjq!aa';",
            "Xk29fjq!aa",
        ),
        (
            "b.sql",
            "CREATE LOGIN app WITH PASSWORD = 'S3rv3r!Pw';",
            "S3rv3r!Pw",
        ),
        (
            "c.sql",
            "SET PASSWORD FOR 'bob'@'%' = PASSWORD('Pw9x!kLz');",
            "Pw9x!kLz",
        ),
        (
            "d.sql",
            "create user scott identified by tiger77 default tablespace users;",
            "tiger77",
        ),
        (
            "setup.sh",
            "psql -c \"ALTER USER postgres PASSWORD 'pgAdm1nPw';\"",
            "pgAdm1nPw",
        ),
        // Dynamic SQL: a statement inside a string literal doubles its quotes, once
        // per level of nesting.
        (
            "e.sql",
            "EXEC('CREATE LOGIN app WITH PASSWORD = ''Dyn4m1c!Pw''');",
            "Dyn4m1c!Pw",
        ),
        (
            "f.sql",
            "EXEC('EXEC(''CREATE LOGIN app WITH PASSWORD = ''''N3st3d.Pw'''' '') AT S1') AT S2",
            "N3st3d.Pw",
        ),
    ];
    for (path, line, secret) in cases {
        assert_redacts(path, line, secret);
    }
}

#[test]
fn sql_text_without_a_password_literal_stays() {
    for (path, line) in [
        ("a.sql", "CREATE USER app WITH PASSWORD NULL;"),
        ("b.sql", "ALTER USER app PASSWORD 'password';"),
        ("c.sql", "-- users are identified by their email address"),
        ("d.md", "The user is identified by name, not by password."),
        ("e.sql", "CREATE USER app WITH PASSWORD :'pw';"),
        // An empty literal is no opener of a doubled-quote one.
        (
            "f.sql",
            "ALTER USER app PASSWORD ''; COMMENT ON ROLE app IS 'no login';",
        ),
        ("g.sql", "EXEC('ALTER USER app PASSWORD '' '' ')"),
    ] {
        assert_nothing(path, line);
    }
}

/// A password held by an option or a string/secret type is the literal inside it
/// (Scala and Rust `Some`, Java `Optional.of`, Rust `String::from`/`SecretString::new`).
#[test]
fn a_password_inside_a_value_wrapper_is_redacted() {
    let cases = [
        (
            "Main.scala",
            "      password = Some(\"suopcr9x\"),",
            "suopcr9x",
        ),
        (
            "main.rs",
            "let password = String::from(\"Kq8zPw2mXt\");",
            "Kq8zPw2mXt",
        ),
        (
            "main.rs",
            "let api_secret = SecretString::new(\"Zq81kLm2Xw\".into());",
            "Zq81kLm2Xw",
        ),
        (
            "App.java",
            "Optional<String> password = Optional.of(\"Vb7Lp0Qs2z\");",
            "Vb7Lp0Qs2z",
        ),
    ];
    for (path, line, secret) in cases {
        assert_redacts(path, line, secret);
    }
}

/// A call that looks a secret up names it; its argument is not the secret.
#[test]
fn a_lookup_call_after_a_password_key_stays() {
    for (path, line) in [
        ("app.py", "password = os.getenv(\"DB_PASSWORD\")"),
        ("App.scala", "password = sys.env.get(\"DB_PASSWORD\"),"),
        ("main.rs", "let password = env::var(\"DB_PASSWORD\")?;"),
        ("Main.scala", "password = Some(dbPassword),"),
        ("Main.scala", "password = None,"),
    ] {
        assert_nothing(path, line);
    }
}

/// A chosen password may hold a word such as `Secret` or `Env`; with three digits or
/// more it is no longer a value that names itself (`test_token`, `mySecret`).
#[test]
fn a_password_holding_a_word_and_digits_is_not_a_stand_in() {
    for (path, line, secret) in [
        (
            "settings.py",
            "SECRET_KEY = \"BetaEnvSecret555\"",
            "BetaEnvSecret555",
        ),
        (
            "settings.py",
            "API_KEY = \"Hunter2-Very-Secret-99\"",
            "Hunter2-Very-Secret-99",
        ),
        (
            "app.yaml",
            "api_key: Hunter2-Very-Secret-99",
            "Hunter2-Very-Secret-99",
        ),
        (
            ".env.txt",
            "SECRET_KEY=BetaEnvSecret555",
            "BetaEnvSecret555",
        ),
        ("mariadb.sh", "mysqlrootpwd=\"JMUHJFY8\"", "JMUHJFY8"),
    ] {
        assert_redacts(path, line, secret);
    }
    for (path, line) in [
        ("settings.py", "SECRET_KEY = \"test_secret_key\""),
        ("settings.py", "API_KEY = \"mySecretApiKey1\""),
        ("env.sh", "OLDPWD=/home/dev/src"),
    ] {
        assert_nothing(path, line);
    }
}

/// Specification section numbers have the shape of an IPv4 address; addresses in the
/// same places stay redacted.
#[test]
fn section_numbers_are_not_addresses() {
    for (path, line) in [
        ("test/built-ins/x.js", "es6id: 19.4.3.4"),
        (
            "src/interp.cpp",
            "// 9.2.1.3 OrdinaryCallEvaluateBody ( F, argumentsList )",
        ),
        ("docs/spec.md", "See § 4.1.2.3 for the details."),
        ("docs/spec.md", "## 10.2.1.4 Parsing Rules"),
        (
            "test/x.js",
            "  22.2.3.5 %TypedArray%.prototype.copyWithin (target, start)",
        ),
        ("test/x.js", "  21.2.5.10 get RegExp.prototype.source"),
        ("test/x.js", "  9.4.5.5 [[Get]] (P, Receiver)"),
        ("test/x.js", "// 19.4.3.4 @@toPrimitive"),
        ("test/x.js", "copyWithin as defined in 22.1.3.3 except that"),
        (
            "test/x.js",
            "the value is not writable (8.12.5 step 3.a) and 15.2.3.6 step 4.c",
        ),
        ("test/x.js", "non-configurable (8.12.9 step 1)"),
        ("test/x.js", "// ES6 19.1.3.6 Object.prototype.toString ( )"),
        ("test/x.js", "// ES 2017 draft 23.1.1.1 Map step 8.a."),
        ("test/x.js", "Iterator Helpers proposal 2.1.5.4 and 2.1.5.6"),
    ] {
        assert_no_span(path, line, "P4");
    }
    for (path, line) in [
        ("hosts.txt", "10.12.30.4 db01"),
        ("app.py", "HOST = \"10.12.30.4\""),
        ("notes.md", "// 10.12.30.4 is the primary"),
        ("notes.md", "Connect to 19.4.3.4 Monday."),
        (
            "notes.md",
            "19.4.3.4 is the gateway for the Rest of the fleet.",
        ),
        ("hosts", "19.4.3.4 get.example.org"),
        ("notes.md", "The address defined in the runbook: 19.4.3.4"),
        ("app.yaml", "  steps: 19.4.3.4"),
    ] {
        assert!(
            values(path, line).contains(&"10.12.30.4".to_owned())
                || values(path, line).contains(&"19.4.3.4".to_owned()),
            "{line}: {:?}",
            spans(path, line)
        );
    }
}

/// `basic` as an English word or an identifier is not the Basic scheme; Basic
/// credentials (base64 of `user:password`) after it are.
#[test]
fn basic_as_a_word_is_not_an_authorization_scheme() {
    for (path, line) in [
        ("README.md", "two a basic nRF51822 boards"),
        (
            "harness.js",
            "let basic = assert._formatIdentityFreeValue(value);",
        ),
        ("notes.md", "The basic idea2 is simple."),
    ] {
        assert_no_span(path, line, "S5");
    }
    // base64("aladdin:opensesame"), in a header and lower-cased in a curl line.
    for (path, line) in [
        (
            "client.py",
            "headers = {\"Authorization\": \"Basic YWxhZGRpbjpvcGVuc2VzYW1l\"}",
        ),
        (
            "notes.md",
            "curl -H 'authorization: basic YWxhZGRpbjpvcGVuc2VzYW1l' https://x",
        ),
    ] {
        assert!(
            values(path, line).contains(&"YWxhZGRpbjpvcGVuc2VzYW1l".to_owned()),
            "{line}: {:?}",
            spans(path, line)
        );
    }
}

/// A phone number that ends a sentence is still a phone number, whole.
#[test]
fn a_phone_number_before_a_full_stop_is_redacted_whole() {
    for (line, phone) in [
        ("Call me at +1 415 555 0199.", "+1 415 555 0199"),
        ("Tel +49 30 1234567.", "+49 30 1234567"),
        ("Phone: +44 20 7946 0958.\nNext line", "+44 20 7946 0958"),
        ("phone: 415 555 0199.", "415 555 0199"),
        ("msg = \"Call me at +1 415 555 0199.\"", "+1 415 555 0199"),
    ] {
        assert!(
            values("notes.md", line).contains(&phone.to_owned()),
            "{line}: {:?}",
            spans("notes.md", line)
        );
    }
    // A version or a decimal after `+` is not one.
    for line in ["Requires +1.2.3.4 or later.", "delta +12.5 ms."] {
        assert_no_span("notes.md", line, "P2");
    }
}

/// An option's description in help output is prose; the value after an option on a
/// command line is a value.
#[test]
fn option_help_text_is_not_a_value() {
    for (path, line) in [
        ("usage.md", "-W, --password  force password prompt"),
        ("help.txt", "  --token\tAccess token to use for the request"),
        (
            "cli.md",
            "    --secret-file   read the secret from this file",
        ),
    ] {
        assert_nothing(path, line);
    }
    for (path, line, secret) in [
        (
            "deploy.sh",
            "mysql -u root --password Xk29fjq9aa db",
            "Xk29fjq9aa",
        ),
        (
            "run.md",
            "app --token ghx8Kq2mZr5Lp0Vt7",
            "ghx8Kq2mZr5Lp0Vt7",
        ),
        (
            "deploy.sh",
            "mysql --password  Xk29fjq9aa  # prod",
            "Xk29fjq9aa",
        ),
    ] {
        assert_redacts(path, line, secret);
    }
}

/// PowerShell takes a password in clear only with `-AsPlainText`; without it the string
/// is already encrypted or prompted for.
#[test]
fn powershell_plain_text_secure_strings_are_redacted() {
    for (line, secret) in [
        (
            "$SecPassword = ConvertTo-SecureString 'user1pwd' -AsPlainText -Force",
            "user1pwd",
        ),
        (
            "New-MachineAccount -MachineAccount X -Password $(ConvertTo-SecureString 'Mncxzu8Hxjt' -AsPlainText -Force)",
            "Mncxzu8Hxjt",
        ),
        (
            "$p = convertto-securestring -String \"Qx7!mZ2pLw\" -asplaintext -force",
            "Qx7!mZ2pLw",
        ),
    ] {
        assert!(
            values("run.ps1", line).contains(&secret.to_owned()),
            "{line}: {:?}",
            spans("run.ps1", line)
        );
    }
    for line in [
        "$s = ConvertTo-SecureString $env:ADMIN_PASSWORD -AsPlainText -Force",
        "$s = ConvertTo-SecureString '01000000d08c9ddf0115d1118c7a00c04fc297eb' ",
        "$s = ConvertTo-SecureString '<password>' -AsPlainText -Force",
    ] {
        assert_no_span("run.ps1", line, "S3.powershell-securestring");
    }
}

/// A credential after an Authorization scheme word is one by its place, short or not.
#[test]
fn a_short_credential_after_an_authorization_scheme_is_redacted() {
    for (path, line, secret) in [
        (
            "client.test.js",
            "authorization: 'ApiKey Zm9vOmJhcg=='",
            "Zm9vOmJhcg==",
        ),
        (
            "api.py",
            "headers = {'Authorization': 'Token 9f3kQ2mZx81'}",
            "9f3kQ2mZx81",
        ),
    ] {
        assert_redacts(path, line, secret);
    }
    for (path, line) in [
        (
            "api.py",
            "headers = {'Authorization': 'Token <your-token>'}",
        ),
        ("docs.md", "Authorization: token YOUR_TOKEN_HERE"),
        ("api.py", "raise ValueError('authorization: key missing')"),
    ] {
        assert_no_span(path, line, "S5");
    }
}

/// A symmetric or MAC key written as a literal into the call that builds it.
#[test]
fn symmetric_keys_built_from_literals_are_redacted() {
    for (path, line, secret) in [
        (
            "sign.js",
            "const key = crypto.createSecretKey(Buffer.from('6b9f1c2e8d7a4b3c5e0f1a2b', 'hex'));",
            "6b9f1c2e8d7a4b3c5e0f1a2b",
        ),
        (
            "Jwt.java",
            "Key key = new SecretKeySpec(\"s3cr3t-signing-k3y\".getBytes(), \"HmacSHA256\");",
            "s3cr3t-signing-k3y",
        ),
        (
            "main.go",
            "tok, err := token.SignedString([]byte(\"gin-jwt-k3y-2024\"))",
            "gin-jwt-k3y-2024",
        ),
        (
            "mac.py",
            "mac = hmac.new(b\"Zq81kLm2Xw77\", msg, hashlib.sha256)",
            "Zq81kLm2Xw77",
        ),
        (
            "mac.js",
            "const h = crypto.createHmac('sha256', 'wh-s3cret-9911').update(body)",
            "wh-s3cret-9911",
        ),
    ] {
        assert_redacts(path, line, secret);
    }
    for (path, line) in [
        (
            "sign.js",
            "const key = crypto.createSecretKey(Buffer.from(process.env.KEY, 'hex'));",
        ),
        ("main.go", "tok, err := token.SignedString(signingKey)"),
        (
            "mac.js",
            "const h = crypto.createHmac('sha256', secret).update(body)",
        ),
        (
            "Jwt.java",
            "Key key = new SecretKeySpec(\"<your-key>\".getBytes(), \"HmacSHA256\");",
        ),
    ] {
        assert_no_span(path, line, "S1.symmetric-key");
    }
}

/// JWK private members are key material however the object is written.
#[test]
fn jwk_private_members_written_as_code_are_redacted() {
    let d = "VFCWOqXr8nvZNyaaJLXdnNPXZKRaWCjkU5Q2egQQpTBMwhprMzWzpR8Sxq1OPThh";
    let k = "GawgguFyGrWKav7AX4VKUg";
    for (path, text, secret) in [
        (
            "keys.js",
            format!("const jwk = {{ kty: 'RSA', e: 'AQAB', d: '{d}' }};"),
            d,
        ),
        (
            "keys.ts",
            format!("const key = {{\n  kty: \"oct\",\n  k: `{k}`,\n}};"),
            k,
        ),
        (
            "keys.py",
            format!("JWK = {{'kty': 'RSA', 'd': '{d}', 'e': 'AQAB'}}"),
            d,
        ),
        (
            "keys.go",
            format!("k := JWK{{Kty: \"RSA\", D: \"{d}\"}}"),
            d,
        ),
        (
            "keys.rs",
            format!("let jwk = Jwk {{ kty: \"oct\".into(), k: \"{k}\".into() }};"),
            k,
        ),
    ] {
        assert_redacts(path, &text, secret);
    }
    // Public members and objects that are not keys stay.
    for (path, text) in [
        (
            "keys.js",
            "const jwk = { kty: 'RSA', e: 'AQAB', n: 'sXchDaQebHnPiGvyDOAT4saGEUetSyo9' };",
        ),
        (
            "icons.js",
            "const icon = { d: 'M10abcdefgh', fill: 'none' };",
        ),
        (
            "keys.js",
            "const spec = { kty: 'RSA', kid: 'signing-key-2024' };",
        ),
    ] {
        assert_no_span(path, text, "S1");
    }
}

/// Self-naming constants and the first word of a sentence are not values.
#[test]
fn self_naming_constants_and_sentences_are_not_values() {
    for (path, line) in [
        ("from_env_test.go", "    oauth_token: GHTOKEN"),
        ("from_env_test.go", "\t\ttoken:     \"ENTOKEN\","),
        ("notes.yml", "token: Note generated by the test"),
        ("setup.md", "password: Enter it twice to confirm"),
    ] {
        assert_nothing(path, line);
    }
    for (path, line, secret) in [
        ("app.yml", "token: ZQ81KLM2XW77PQ", "ZQ81KLM2XW77PQ"),
        ("app.yml", "password: Zq81kLm2Xw # rotated", "Zq81kLm2Xw"),
    ] {
        assert_redacts(path, line, secret);
    }
}

/// A ticket that grants access (WeChat's `jsapi_ticket`, a Kerberos ticket) is a weak
/// key: its value is redacted when it looks like a token, an issue key stays.
#[test]
fn access_tickets_with_token_values_are_redacted() {
    let line = "jsapi_ticket = 'oQ9PUByVrGC6EtaUEQg0HBNRJVDf2B2EI1U40uLYOLhs'";
    assert!(
        values("test_basic.py", line)
            .contains(&"oQ9PUByVrGC6EtaUEQg0HBNRJVDf2B2EI1U40uLYOLhs".to_owned()),
        "{:?}",
        spans("test_basic.py", line)
    );
    for (path, line) in [
        ("notes.yml", "ticket: PROJ-1234"),
        ("notes.md", "ticket: see the issue tracker"),
        ("app.py", "ticket = get_ticket(user)"),
    ] {
        assert_nothing(path, line);
    }
}

/// A qualified class name stands where a value goes; a token there is still one.
#[test]
fn qualified_class_names_are_not_secrets() {
    for (path, line) in [
        (
            "forms.rst",
            "ACCOUNT_FORMS = {'change_password': 'allauth.account.forms.ChangePasswordForm'}",
        ),
        (
            "settings.py",
            "PASSWORD_HASHER = 'django.contrib.auth.hashers.Argon2PasswordHasher'",
        ),
    ] {
        assert_nothing(path, line);
    }
    assert_redacts("users.yml", "password: qwerty123", "qwerty123");
}

#[test]
fn s3_negated_keys_working_directories_paths_and_file_names_are_not_secrets() {
    for (path, text) in [
        (
            "sudoers.md",
            "echo \"username ALL=NOPASSWD: /bin/bash\" >>/etc/sudoers",
        ),
        ("a.yml", "no_password: /usr/local/bin"),
        ("run.md", "$> docker run -it --rm -v $PWD:/mnt bash"),
        ("a.sh", "OLDPWD=/home/me/src"),
        (
            "ssrf.md",
            "Temporary AWS credentials : /latest/meta-data/iam/security-credentials/",
        ),
        ("cm.yml", "- key: ovn4nfv_k8s.conf"),
        ("a.yml", "ssl_key: server.key"),
    ] {
        assert_nothing(path, text);
    }
    // ODBC's `PWD` is a password; a password key that merely starts with `no…` or a
    // path-like secret is still read.
    assert_redacts(
        "a.cs",
        "var cs = \"Server=db;UID=sa;PWD=Xk29fjq9aaLm;\";",
        "Xk29fjq9aaLm",
    );
    assert_redacts("a.env", "NODE_PASSWORD=Xk29fjq9aaLm", "Xk29fjq9aaLm");
    assert_redacts("a.env", "DB_PWD=Xk29fjq9aaLm", "Xk29fjq9aaLm");
    assert_redacts("a.js", "login({password: 'Xk29fjq9aaLm'})", "Xk29fjq9aaLm");
    assert_nothing(
        "a.sh",
        "echo ${API_TOKEN}:Xk29fjq9aaLm $API_TOKEN:Xk29fjq9aaLm",
    );
    assert_redacts("a.yml", "token: ab/Cd9+Xk2/fj3Lq", "ab/Cd9+Xk2/fj3Lq");
}

#[test]
fn s3_names_labels_calls_and_types_are_not_values() {
    for (path, text) in [
        ("menu.py", "'key': 'V1001_GOOD'"),
        (
            "Hint.cs",
            "public const string HintTextPassword = \"Password\";",
        ),
        (
            "jwt.md",
            "JSON Web Token : `Base64(Header).Base64(Data).Base64(Signature)`",
        ),
        (
            "Msg.scala",
            "def md5(user: String, password: String, salt: Array[Byte]) = x",
        ),
        (
            "creds.md",
            "$secpasswd = ConvertTo-SecureString \"<password>\" -AsPlainText -Force",
        ),
        (
            "creds.md",
            "PS> $cred = New-Object System.Management.Automation.PSCredential('DOMAIN\\Username', $pass)",
        ),
    ] {
        assert_nothing(path, text);
    }
    // The forms these resemble still count: a mixed-case value, a bare value, a setter
    // of a token given more arguments, a password of the field's name in lower case.
    assert_redacts("a.py", "'key': 'V1001_GoodKq29x'", "V1001_GoodKq29x");
    assert_redacts("a.py", "MAIL_PASSWORD = \"password\"", "password");
    assert_redacts("a.yml", "salt_token: Xk29fjq9aaLm", "Xk29fjq9aaLm");
    assert_redacts(
        "A.java",
        "dao.setToken(\"k8Jq2LmZp0Xw4Rt7\", 3600);",
        "k8Jq2LmZp0Xw4Rt7",
    );
}

#[test]
fn s3_stand_ins_for_tokens_are_not_tokens() {
    for (path, text) in [
        ("a.py", "headers=self.cookie_headers(token=\"deadbeef\")"),
        (
            "a.md",
            "export GITROB_ACCESS_TOKEN=deadbeefdeadbeefdeadbeefdeadbeefdeadbeef",
        ),
        ("a.conf", "token = quux"),
        ("a.ts", "let loc = { hash: 'access_token=testing' };"),
        ("A.cs", "Token = \"testtoken\","),
        (
            "A.cs",
            "private const string MOCK_ACCESS_TOKEN = \"at-0987654321\";",
        ),
        ("a.js", "const fakeSecret = 'Zx9Lq2Wm7Rt4';"),
    ] {
        assert_nothing(path, text);
    }
    // A password may be a plain word, and a token holding such words as humps is random.
    assert_redacts("a.py", "password = \"testing\"", "testing");
    assert_redacts("a.py", "api_token = \"kdjFooLq3Xw9Zp\"", "kdjFooLq3Xw9Zp");
    assert_redacts("a.py", "secret = \"supersecret\"", "supersecret");
}

#[test]
fn s3_headers_in_strings_comments_sql_and_console_settings() {
    let key = "fa236589d226733c6e2a96da291e8257a0e";
    for (path, text) in [
        (
            "a.md",
            format!("curl -H \"X-HockeyAppToken: {key}\" https://x.io"),
        ),
        (
            "a.sh",
            format!("curl --header 'Private-Token: {key}' https://x.io"),
        ),
        ("a.js", format!("headers.push(\"X-Api-Key: {key}\");")),
    ] {
        assert_redacts(path, &text, key);
    }
    // A message that merely holds `Token: …` is not a header line.
    assert_nothing("a.js", "throw new Error(\"token: expired or revoked\");");

    // An environment line in a comment is read as the shell reads it; in code the
    // same bare word is an identifier.
    assert_redacts(
        "a.js",
        "/*\n *   SCRAM_TEST_PGPASSWORD=qqjw4sidtu\n */",
        "qqjw4sidtu",
    );
    assert_redacts("a.py", "# export API_TOKEN=Xk29fj3kLq", "Xk29fj3kLq");
    assert_nothing("a.js", "const PASSWORD=qqjw4sidtu;");

    assert_redacts(
        "a.sql",
        "insert into mysql.user (user, host, password) values ('n', 'h', password('pass123'))",
        "pass123",
    );
    assert_nothing("a.sql", "SELECT hash_password('x'), PASSWORD(col) FROM t");

    assert_redacts(
        "msf.md",
        "    set SMBPass e52cac67419a9a224a3b108f3fa6cb6d:2226d0aaeb0fa623fd50aaf423b5288b",
        "e52cac67419a9a224a3b108f3fa6cb6d:2226d0aaeb0fa623fd50aaf423b5288b",
    );
    assert_nothing("a.md", "set password prompts for a new one");
}

#[test]
fn s3_usage_words_and_concatenations_are_not_values() {
    for (path, text) in [
        (
            "a.md",
            "Rubeus.exe asktgt /user:USER /password:PASSWORD [/ptt]",
        ),
        (
            "a.md",
            "\"SELECT * FROM admin WHERE pass = '\".md5($password,true).\"'\"",
        ),
    ] {
        assert_nothing(path, text);
    }
    assert_redacts(
        "a.md",
        "mimikatz \"kerberos::hash /password:MncxzujuHx\"",
        "MncxzujuHx",
    );
}

#[test]
fn s1_reads_short_key_bodies_and_not_code_between_armour_lines() {
    let body = "MC4CAQAwWQNCS4XbOSILSHMrify1U3pH3jdZ2lmj+B53/xxlc/GE++TFhE2AtXsP";
    let text = format!(
        "$key = PublicKeyLoader::load('-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----');"
    );
    assert!(
        values("a.php", &text).iter().any(|v| v.contains(body)),
        "{:?}",
        spans("a.php", &text)
    );
    let code = "$res = \"-----BEGIN RSA PRIVATE KEY-----\\n\" .\n\twordwrap($priKey, 64, \"\\n\", true) .\n\t\"\\n-----END RSA PRIVATE KEY-----\";";
    assert_nothing("a.php", code);
}

/// HTTP Basic credentials built by hand: a `user:password` literal given to a base64
/// encoder, in each language's spelling of it.
#[test]
fn a_user_password_literal_encoded_to_base64_is_a_credential() {
    assert_finds(&[
        (
            "t.py",
            "auth = base64.b64encode(b'svc:Zq81-lpX').decode()",
            "svc:Zq81-lpX",
        ),
        (
            "t.py",
            "h = base64.b64encode(\"alice:Wq7pZt2x\".encode())",
            "alice:Wq7pZt2x",
        ),
        ("t.js", "const b = btoa('bob:Kx9mQ2vL');", "bob:Kx9mQ2vL"),
        (
            "t.js",
            "const h = 'Basic ' + Buffer.from('carol:m4Vt.9q').toString('base64');",
            "carol:m4Vt.9q",
        ),
        ("t.rb", "Base64.encode64(\"dan:s3cr.Et9\")", "dan:s3cr.Et9"),
        (
            "t.go",
            "b := base64.StdEncoding.EncodeToString([]byte(\"eve:Pw0rd77\"))",
            "eve:Pw0rd77",
        ),
        (
            "T.java",
            "String b = Base64.getEncoder().encodeToString(\"fay:r3dH4t!\".getBytes());",
            "fay:r3dH4t!",
        ),
        (
            "T.cs",
            "var b = Convert.ToBase64String(Encoding.UTF8.GetBytes(\"gus:Tq5_vv0\"));",
            "gus:Tq5_vv0",
        ),
    ]);
}

#[test]
fn base64_of_a_placeholder_pair_a_url_or_a_non_pair_is_no_credential() {
    for line in [
        "creds = btoa('user:<password>')",
        "creds = btoa('user:changeme')",
        "creds = btoa('user:${PASSWORD}')",
        "data = base64.b64encode(b'http://example.org/x')",
        "data = base64.b64encode(b'just some bytes')",
        "s = Buffer.from('a:b:c d').toString('base64')",
        "s = Buffer.from('user:secret').toString('hex')",
    ] {
        assert_no_span("t.js", line, "S5.basic");
    }
}

/// The pair's bounds: a user of up to 64 characters (Unicode letters too) and a
/// password of up to 128; a longer run is data encoded, not a login.
#[test]
fn an_encoded_pair_is_a_credential_only_within_its_length_bounds() {
    let user64 = "u".repeat(63) + "é";
    let pass128 = "Zq8-".repeat(32);
    for (user, pass, found) in [
        (user64.as_str(), "Wq7pZt2x", true),
        ("søren", pass128.as_str(), true),
        (&*format!("{user64}x"), "Wq7pZt2x", false),
        ("alice", &*format!("{pass128}9"), false),
    ] {
        let pair = format!("{user}:{pass}");
        for line in [
            format!("h = base64.b64encode(b'{pair}')"),
            format!("h = Buffer.from('{pair}').toString('base64')"),
        ] {
            if found {
                assert_finds(&[("t.js", &line, &pair)]);
            } else {
                assert_no_span("t.js", &line, "S5.basic");
            }
        }
    }
}

/// Names that configure how a secret is checked are not secrets: etcd's
/// `initial-cluster-token` (a name that keeps bootstrapping clusters apart) and
/// authentication mechanism names; a cluster's join token still is one.
#[test]
fn etcd_cluster_names_and_auth_mechanism_names_are_not_secrets() {
    for (path, line) in [
        ("etcd.env", "ETCD_INITIAL_CLUSTER_TOKEN=k8s_etcd"),
        (
            "run.sh",
            "etcd --initial-cluster-token etcd-cluster-1 --name infra0",
        ),
        ("c.yml", "initial-cluster-token: 'etcd-cluster'"),
        (
            "docker-compose.yml",
            "POSTGRES_INITDB_ARGS: --auth-host=scram-sha-256",
        ),
        ("postgresql.conf", "password_encryption = scram-sha-256"),
        ("mail.rc", "set smtp-auth=CRAM-MD5"),
    ] {
        assert_nothing(path, line);
    }
    assert_finds(&[
        (
            "k3s.env",
            "K3S_CLUSTER_TOKEN=K10a8f3e2b9c7d6e5f4a3b2c1d0::server:9f8e7d6c",
            "K10a8f3e2b9c7d6e5f4a3b2c1d0::server:9f8e7d6c",
        ),
        (
            "c.env",
            "CLUSTER_TOKEN=9f8e7d6c5b4a3f2e1d0c",
            "9f8e7d6c5b4a3f2e1d0c",
        ),
    ]);
}

/// A bare `key` holding a label key or resource name (Kubernetes tolerations, selectors,
/// `secretKeyRef`) names something; a key of random or hex segments is still a key.
#[test]
fn a_key_holding_a_label_name_is_a_name() {
    for line in [
        "  - key: ovn4nfv-k8s-plugin",
        "  - key: node-role.kubernetes.io/master",
        "        key: tls.crt",
        "  \"key\": \"app.kubernetes.io/name\",",
    ] {
        assert_nothing("deploy.yaml", line);
    }
    assert_finds(&[
        (
            "c.yaml",
            "key: 9f8e7d6c5b4a-3f2e1d0c9b8a-7f6e5d4c",
            "9f8e7d6c5b4a-3f2e1d0c9b8a-7f6e5d4c",
        ),
        ("c.yaml", "key: Kx9mQ2vLw8Zt5Rp1", "Kx9mQ2vLw8Zt5Rp1"),
    ]);
}

/// Base64 of a DER private key without PEM armour, wherever it is written, is a key;
/// base64 of a public key or a certificate is not. Bodies are built from the DER
/// grammar: an outer SEQUENCE and the version INTEGER of each private key structure.
#[test]
fn s1_der_private_keys_without_armour() {
    // Standard base64 (RFC 4648), with padding.
    let b64 = |der: &[u8]| -> String {
        const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in der.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    };
    let filler: Vec<u8> = (0u8..=255).cycle().skip(7).take(300).collect();
    let der = |head: &[u8]| [head, &filler[..]].concat();
    // PKCS #1 RSA, PKCS #8 RSA, SEC1 P-256, PKCS #8 Ed25519 (48 bytes).
    let rsa = b64(&der(&[
        0x30, 0x82, 0x01, 0x31, 0x02, 0x01, 0x00, 0x02, 0x82,
    ]));
    let pkcs8 = b64(&der(&[
        0x30, 0x82, 0x01, 0x31, 0x02, 0x01, 0x00, 0x30, 0x0d,
    ]));
    let sec1 = b64(&der(&[0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20])[..119]);
    let ed = b64(&[
        &[
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70,
        ][..],
        &filler[..36],
    ]
    .concat());
    let block = |s: &str| {
        s.as_bytes()
            .chunks(64)
            .map(|c| format!("  {}\n", std::str::from_utf8(c).unwrap()))
            .collect::<String>()
    };
    for (path, text, body) in [
        (
            "k.yaml",
            format!("tls_key_body: |\n{}next: 1\n", block(&rsa)),
            &rsa,
        ),
        ("k.txt", format!("ssh_key_b64 = {pkcs8}\n"), &pkcs8),
        ("k.env", format!("EC_KEY={sec1}\n"), &sec1),
        ("k.json", format!("{{\"seed\": \"{ed}\"}}"), &ed),
    ] {
        let got = values(path, &text);
        let flat: String = got.concat().split_whitespace().collect();
        assert!(flat.contains(body.as_str()), "{path}: {got:?}");
        assert!(!got.concat().contains("next"), "{path}: {got:?}");
    }
    // A stub: a 1,193-byte RSA key's first line, the rest elided.
    let stub = b64(&der(&[
        0x30, 0x82, 0x04, 0xa5, 0x02, 0x01, 0x00, 0x02, 0x82,
    ]));
    let stub = format!("private_key: `{}\\n...`\n", &stub[..64]);
    assert!(
        spans("doc.rb", &stub)
            .iter()
            .all(|(_, d)| *d != "S1.der-key")
    );
    // A public key (SubjectPublicKeyInfo) and a certificate open with a nested SEQUENCE.
    let public = b64(&der(&[0x30, 0x82, 0x01, 0x22, 0x30, 0x0d, 0x06, 0x09]));
    let cert = b64(&der(&[0x30, 0x82, 0x03, 0x0a, 0x30, 0x82, 0x01, 0xf2]));
    for text in [format!("pub = {public}\n"), format!("cert: {cert}\n")] {
        assert!(
            spans("k.txt", &text)
                .iter()
                .all(|(_, d)| *d != "S1.der-key"),
            "{text}"
        );
    }
}
