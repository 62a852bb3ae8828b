//! The search relevance set (`bench/search-queries.json`) against the
//! catalogue it was written for: the LocalAI document's operations and the
//! reference MCP servers' tools (`bench/fixtures/reference-tools.json`).
//! Shared by the benchmark and the recall test, which includes this file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mcpyard_gateway::{ListItem, ToolIndex};
use serde_json::{json, Value};

/// One query and the names of the tools that answer it.
#[derive(Debug, Clone)]
pub struct Query {
    pub query: String,
    pub relevant: Vec<String>,
}

/// The catalogue and the queries over it, targets mapped to tool names.
#[derive(Debug)]
pub struct RelevanceSet {
    pub index: ToolIndex,
    pub queries: Vec<Query>,
}

/// Recall at 1, 5 and 10 and the mean reciprocal rank of the first
/// relevant tool, over the queries; `misses` are the queries with nothing
/// relevant in the first five.
#[derive(Debug, Clone, Default)]
pub struct Scores {
    pub queries: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub mrr: f64,
    pub misses: Vec<(String, Vec<String>)>,
}

/// The workspace root (this file sits in `bench/src`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|p| p.join("bench/search-queries.json").exists())
        .map(Path::to_path_buf)
        .expect("the workspace root holds bench/search-queries.json")
}

/// The LocalAI document, kept beside the repository with the other shared
/// fixtures.
pub fn localai_document(root: &Path) -> PathBuf {
    root.join("../shared/fixtures/openapi/localai-swagger.json")
}

impl RelevanceSet {
    pub fn load(root: &Path) -> Result<Self, String> {
        let read = |path: &Path| -> Result<Value, String> {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
        };
        let queries = read(&root.join("bench/search-queries.json"))?;
        let reference = read(&root.join("bench/fixtures/reference-tools.json"))?;
        let mut tools: Vec<(String, Value)> = Vec::new();
        // "SOURCE NAME" or "localai METHOD /path" → the listed name.
        let mut targets: HashMap<String, String> = HashMap::new();
        let servers = reference
            .as_object()
            .ok_or("reference tools: not an object")?;
        for (source, list) in servers {
            for tool in list.as_array().into_iter().flatten() {
                let own = tool["name"].as_str().unwrap_or_default();
                let name = format!("{source}__{own}");
                targets.insert(format!("{source} {own}"), name.clone());
                let mut tool = tool.clone();
                tool["name"] = json!(name);
                tools.push((source.clone(), tool));
            }
        }
        for (route, tool) in localai_tools(&localai_document(root))? {
            let name = format!("localai__{}", tool["name"].as_str().unwrap_or_default());
            targets.insert(format!("localai {route}"), name.clone());
            let mut tool = tool;
            tool["name"] = json!(name);
            tools.push(("localai".to_owned(), tool));
        }
        let mut out = Vec::new();
        for q in queries["queries"].as_array().into_iter().flatten() {
            let mut relevant = Vec::new();
            for target in q["relevant"].as_array().into_iter().flatten() {
                let target = target.as_str().unwrap_or_default();
                let name = targets
                    .get(target)
                    .ok_or_else(|| format!("target {target:?} is in no tool list"))?;
                relevant.push(name.clone());
            }
            out.push(Query {
                query: q["query"].as_str().unwrap_or_default().to_owned(),
                relevant,
            });
        }
        Ok(Self {
            index: ToolIndex::new(
                tools
                    .into_iter()
                    .map(|(source, tool)| (source, ListItem::tool(&tool))),
            ),
            queries: out,
        })
    }

    pub fn score(&self) -> Scores {
        let mut s = Scores {
            queries: self.queries.len(),
            ..Scores::default()
        };
        for q in &self.queries {
            let hits = self.index.search(&q.query, self.index.len());
            let rank = hits
                .iter()
                .position(|h| {
                    q.relevant
                        .iter()
                        .any(|r| **r == *self.index.tools()[h.index].name)
                })
                .map(|p| p + 1);
            let within = |k: usize| f64::from(u8::from(rank.is_some_and(|r| r <= k)));
            s.recall_at_1 += within(1);
            s.recall_at_5 += within(5);
            s.recall_at_10 += within(10);
            s.mrr += rank.map_or(0.0, |r| 1.0 / r as f64);
            if rank.is_none_or(|r| r > 5) {
                let top: Vec<String> = hits
                    .iter()
                    .take(3)
                    .map(|h| self.index.tools()[h.index].name.to_string())
                    .collect();
                s.misses.push((q.query.clone(), top));
            }
        }
        let n = s.queries.max(1) as f64;
        s.recall_at_1 /= n;
        s.recall_at_5 /= n;
        s.recall_at_10 /= n;
        s.mrr /= n;
        s
    }
}

/// The document's operations as tools, as the OpenAPI loader makes them,
/// each with its `METHOD /path`.
fn localai_tools(path: &Path) -> Result<Vec<(String, Value)>, String> {
    let options = mcpyard_openapi::LoadOptions {
        prefix_len: "localai__".len(),
        ..mcpyard_openapi::LoadOptions::default()
    };
    let doc = mcpyard_openapi::load_file(path, &options).map_err(|e| e.to_string())?;
    Ok(doc
        .operations
        .iter()
        .map(|op| {
            (
                format!("{} {}", op.method, op.path),
                json!({
                    "name": op.name,
                    "description": op.tool_description,
                    "inputSchema": op.input_schema,
                }),
            )
        })
        .collect())
}
