//! The deployment recipes a team follows (`contrib/`): the Kubernetes
//! manifests validate against the Kubernetes schemas (kubernetes-validate,
//! from PyPI, which bundles them), the gateway configuration they carry
//! passes `mcpyard check`, and the Deployment agrees with the image's
//! recipe and with the gateway's drain.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_yaml_ng::Value as Yaml;
use support::*;

fn manifests() -> PathBuf {
    root().join("contrib/kubernetes/mcpyard.yaml")
}

fn containerfile() -> String {
    std::fs::read_to_string(root().join("contrib/container/Containerfile"))
        .expect("the Containerfile")
}

/// Every document of the manifests file.
fn resources() -> Vec<Yaml> {
    let text = std::fs::read_to_string(manifests()).expect("the manifests");
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("valid YAML"))
        .collect()
}

fn resource<'a>(all: &'a [Yaml], kind: &str, name: &str) -> &'a Yaml {
    all.iter()
        .find(|r| r["kind"].as_str() == Some(kind) && r["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {kind} {name} in the manifests"))
}

/// kubernetes-validate in strict mode on `file`: whether it passed, and
/// what it said.
fn validate(file: &Path) -> (bool, String) {
    let mut cmd = Command::new(tool("venv-k8s/bin/kubernetes-validate"));
    cmd.arg("--strict").arg(file);
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(120));
    (ok, format!("{stdout}{stderr}"))
}

#[test]
fn the_kubernetes_manifests_validate_against_the_schemas() {
    let (ok, said) = validate(&manifests());
    assert!(ok, "{said}");
    assert_eq!(said.matches(" passed for resource ").count(), 6, "{said}");
    // The same file with one misspelt field fails: the check can fail.
    let dir = scratch();
    let broken = dir.path().join("broken.yaml");
    let text = std::fs::read_to_string(manifests()).unwrap();
    std::fs::write(&broken, text.replacen("containerPort", "containerPrt", 1)).unwrap();
    let (ok, said) = validate(&broken);
    assert!(!ok, "a misspelt field is refused: {said}");
}

#[test]
fn the_configuration_the_manifests_carry_passes_mcpyard_check() {
    let all = resources();
    let config = resource(&all, "ConfigMap", "mcpyard-config")["data"]["mcpyard.toml"]
        .as_str()
        .expect("mcpyard.toml in the ConfigMap")
        .to_owned();
    let secrets = &resource(&all, "Secret", "mcpyard-secrets")["stringData"];
    let dir = scratch();
    let file = dir.path().join("mcpyard.toml");
    std::fs::write(&file, config).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
    cmd.arg("check").arg("--config").arg(&file);
    for var in ["MCPYARD_TEAM_KEY", "MCPYARD_REDIS_PASSWORD"] {
        cmd.env(var, secrets[var].as_str().expect("the secret's value"));
    }
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(60));
    assert!(ok, "mcpyard check:\n{stdout}\n{stderr}");
}

#[test]
fn the_deployment_agrees_with_the_image_and_the_drain() {
    let all = resources();
    let deployment = resource(&all, "Deployment", "mcpyard");
    let spec = &deployment["spec"]["template"]["spec"];
    let container = &spec["containers"][0];
    assert_eq!(deployment["spec"]["replicas"].as_u64(), Some(3));
    // The drain (5 s) and the upstreams' stop (10 s) fit in the grace period.
    assert!(spec["terminationGracePeriodSeconds"].as_u64() >= Some(15));
    assert_eq!(
        container["readinessProbe"]["httpGet"]["path"].as_str(),
        Some("/ready")
    );
    assert_eq!(
        container["livenessProbe"]["httpGet"]["path"].as_str(),
        Some("/health")
    );
    // The image runs what the Deployment runs, as the user it expects.
    let recipe = containerfile();
    let cmd_line = recipe
        .lines()
        .find_map(|l| l.strip_prefix("CMD "))
        .expect("a CMD line");
    let image_args: Vec<String> = serde_json::from_str(cmd_line).expect("CMD as a JSON array");
    let deployment_args: Vec<String> = container["args"]
        .as_sequence()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    assert_eq!(image_args, deployment_args);
    let config_dir = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    assert!(
        image_args.iter().any(|a| a.starts_with(config_dir)),
        "{image_args:?}"
    );
    let uid = spec["securityContext"]["runAsUser"].as_u64().unwrap();
    assert!(
        recipe.contains(&format!("USER {uid}:")),
        "the image's user is {uid}"
    );
    assert!(recipe.contains(" AS build"), "a multi-stage build");
}
