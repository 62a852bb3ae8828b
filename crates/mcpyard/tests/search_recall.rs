//! Search relevance does not fall: the query set (`bench/search-queries.json`)
//! over the LocalAI operations and the reference servers' tools, ranked by
//! the gateway's index. `cargo run -p mcpyard-bench --bin search` prints the
//! same figures and the queries that miss.

// Shared with the benchmark, where its items are the library's API.
#[allow(unreachable_pub, dead_code)]
#[path = "../../../bench/src/relevance.rs"]
mod relevance;

use relevance::{workspace_root, RelevanceSet};

/// Measured when the ranking was last changed (recall@5 0.857, MRR 0.664),
/// less a small margin for harmless changes of the loader's descriptions.
const MIN_RECALL_AT_5: f64 = 0.82;
const MIN_MRR: f64 = 0.62;

#[test]
fn recall_at_5_and_mrr_stay_at_what_was_measured() {
    let set = RelevanceSet::load(&workspace_root()).expect("the relevance set loads");
    assert!(set.queries.len() >= 50, "{} queries", set.queries.len());
    assert!(set.index.len() >= 150, "{} tools", set.index.len());
    let scores = set.score();
    let misses: Vec<String> = scores
        .misses
        .iter()
        .map(|(q, top)| format!("{q:?} → {}", top.join(", ")))
        .collect();
    assert!(
        scores.recall_at_5 >= MIN_RECALL_AT_5 && scores.mrr >= MIN_MRR,
        "recall@5 {:.3} (at least {MIN_RECALL_AT_5}), MRR {:.3} (at least {MIN_MRR}); misses:\n{}",
        scores.recall_at_5,
        scores.mrr,
        misses.join("\n")
    );
}
