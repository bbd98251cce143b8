//! Discovery through the real backend: run for the operator, refused for an agent
//! before anything is read, sampled or written.

use redctx_daemon::engine::config::EnvOverrides;
use redctx_daemon::server::{Backend, Cancel};
use redctx_daemon::service::{DISCOVERY_REFUSED, Service};
use redctx_proto::{Caller, DiscoverParams, DiscoverUpdateParams, ModelParams, RootSpec};

fn setup() -> (tempfile::TempDir, Service, RootSpec) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("notes.md"), "Globex asked Initech.\n").unwrap();
    let service = Service::new(
        None,
        EnvOverrides {
            state_dir: Some(dir.path().join("state")),
            ..EnvOverrides::default()
        },
    );
    let spec = RootSpec {
        path: root.canonicalize().unwrap(),
        gitignore: true,
        ..RootSpec::default()
    };
    (dir, service, spec)
}

fn model() -> ModelParams {
    ModelParams {
        endpoint: Some("http://127.0.0.1:9".into()),
        timeout_ms: 2_000,
        ..ModelParams::default()
    }
}

#[test]
fn an_agent_cannot_run_discovery() {
    let (_dir, service, spec) = setup();
    let draft = DiscoverParams {
        model: model(),
        max_files: 10,
        max_chars_per_file: 100,
        max_total_raw_bytes: 1_000,
        output: Some("draft.toml".into()),
        ..DiscoverParams::default()
    };
    let err = service
        .discover(&spec, Caller::Agent, 1, &draft, &Cancel::new())
        .unwrap_err();
    assert_eq!(err.message, DISCOVERY_REFUSED);
    let merge = DiscoverUpdateParams {
        merge_only: true,
        max_files: 10,
        max_chars_per_document: 100,
        max_total_chars: 1_000,
        output_config: ".agent-context-redactor.toml".into(),
        seed_config: Some("seed.toml".into()),
        ..DiscoverUpdateParams::default()
    };
    std::fs::write(
        spec.path.join("seed.toml"),
        "[redaction]\nclients = [\"Globex\"]\n",
    )
    .unwrap();
    let err = service
        .discover_update(&spec, Caller::Agent, 2, &merge, &Cancel::new())
        .unwrap_err();
    assert_eq!(err.message, DISCOVERY_REFUSED);
    assert!(!spec.path.join("draft.toml").exists());
    assert!(!spec.path.join(".agent-context-redactor.toml").exists());

    // The same requests for the operator run: the merge writes the config, the draft
    // gets as far as the model.
    let done = service
        .discover_update(&spec, Caller::Operator, 2, &merge, &Cancel::new())
        .unwrap();
    assert!(
        done.stdout.starts_with("documents: 0\nmodel: skipped\n"),
        "{}",
        done.stdout
    );
    assert!(
        done.stdout.ends_with("config_changed: true\n"),
        "{}",
        done.stdout
    );
    let written = std::fs::read_to_string(spec.path.join(".agent-context-redactor.toml")).unwrap();
    assert!(written.contains("Globex"), "{written}");
    let err = service
        .discover(&spec, Caller::Operator, 1, &draft, &Cancel::new())
        .unwrap_err();
    assert!(
        err.message.starts_with("Could not reach local Ollama"),
        "{}",
        err.message
    );
    assert_eq!(service.discover_progress(1), (0, 0));
}
