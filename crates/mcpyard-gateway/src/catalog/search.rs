//! Tool search: a lexical index over tools (BM25F over the name split into
//! words, the description, the parameters and the source), built once per
//! catalogue change and queried by the search tool. Public so that a
//! benchmark or a recall test can drive it without a gateway.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};
use serde_json::Value;

use crate::call::ListItem;

/// One tool in the index: its name as clients call it, its source and its
/// item (as the source lists it: a hidden tool keeps no renamed copy).
#[derive(Debug, Clone)]
pub struct IndexedTool {
    pub name: Arc<str>,
    /// Shared by every tool of the source.
    pub source: Arc<str>,
    pub tool: ListItem,
}

impl IndexedTool {
    /// The first line of the description (or the title), for compact lists.
    pub fn summary(&self) -> String {
        let tool = self.tool.to_value();
        let text = tool
            .get("description")
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty())
            .or_else(|| tool.get("title").and_then(Value::as_str))
            .unwrap_or("");
        text.trim().lines().next().unwrap_or("").trim().to_owned()
    }
}

/// A tool's words as the index weighs them, read once per item and kept
/// with it: an index is rebuilt at each catalogue change without reading
/// every tool again.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolTerms(Arc<Terms>);

#[derive(Debug, Default)]
struct Terms {
    /// Each term followed by a NUL (which no term contains).
    text: String,
    /// The weighted count of each term, in the same order.
    weights: Vec<f32>,
    /// The sum of the weights: the tool's length for BM25.
    length: f32,
}

impl ToolTerms {
    /// The words of the tool listed as `name` from `source`: its name and
    /// title, its source, its description, its parameters' names and
    /// descriptions, each weighted by where it occurs.
    pub(crate) fn read(name: &str, source: &str, item: &ListItem) -> Self {
        let tool = item.to_value();
        let mut weights: HashMap<String, f32> = HashMap::new();
        let mut add = |text: &str, weight: f32| {
            for term in terms(text) {
                *weights.entry(term).or_default() += weight;
            }
        };
        add(name, NAME_WEIGHT);
        if let Some(title) = tool.get("title").and_then(Value::as_str) {
            add(title, NAME_WEIGHT);
        }
        add(source, SOURCE_WEIGHT);
        if let Some(d) = tool.get("description").and_then(Value::as_str) {
            add(d, DESCRIPTION_WEIGHT);
        }
        if let Some(props) = tool
            .pointer("/inputSchema/properties")
            .and_then(Value::as_object)
        {
            for (param, schema) in props {
                add(param, PARAM_NAME_WEIGHT);
                if let Some(d) = schema.get("description").and_then(Value::as_str) {
                    add(d, PARAM_DESCRIPTION_WEIGHT);
                }
            }
        }
        let mut read = Terms::default();
        for (term, weight) in weights {
            read.text.push_str(&term);
            read.text.push('\0');
            read.weights.push(weight);
            read.length += weight;
        }
        read.text.shrink_to_fit();
        read.weights.shrink_to_fit();
        Self(Arc::new(read))
    }

    /// Whether both are the same reading (not read twice).
    pub(super) fn is(&self, other: &ToolTerms) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    fn iter(&self) -> impl Iterator<Item = (&str, f32)> {
        self.0
            .text
            .split_terminator('\0')
            .zip(self.0.weights.iter().copied())
    }
}

/// A search result: the tool's position in [`ToolIndex::tools`] and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub index: usize,
    pub score: f32,
}

/// How much one occurrence of a word counts, by where it occurs.
const NAME_WEIGHT: f32 = 3.0;
const SOURCE_WEIGHT: f32 = 1.0;
const DESCRIPTION_WEIGHT: f32 = 1.0;
const PARAM_NAME_WEIGHT: f32 = 1.0;
const PARAM_DESCRIPTION_WEIGHT: f32 = 0.5;
/// BM25's saturation and length normalisation.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// A tool to index: its source, its name, the item, its words.
pub(crate) type ReadTool = (Arc<str>, Arc<str>, ListItem, ToolTerms);

/// A lexical index over a set of tools.
#[derive(Debug, Default)]
pub struct ToolIndex {
    tools: Vec<IndexedTool>,
    /// Each tool's words, so that the next index can keep its postings.
    words: Vec<ToolTerms>,
    /// Positions in `tools`, in the order of their names: a lookup by name
    /// without a second copy of every name.
    by_name: Vec<u32>,
    terms: TermSpans,
    /// (tool, weighted frequency) of every term, one term after the other:
    /// one allocation for all of them, not one per term (most terms of a
    /// large catalogue name a single tool).
    postings: Vec<(u32, f32)>,
    lengths: Vec<f32>,
    /// Each tool's BM25 length norm, `K1 * (1 - B + B * length / average)`:
    /// computed once per index, not once per posting of every search.
    norms: Vec<f32>,
}

/// term → where its postings are in [`ToolIndex::postings`]
type TermSpans = HashMap<Box<str>, Span>;

/// One term's postings in [`ToolIndex::postings`].
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
}

impl ToolIndex {
    /// Indexes `(source, tool)` pairs; a tool's name is its `name` field.
    pub fn new(tools: impl IntoIterator<Item = (String, ListItem)>) -> Self {
        Self::with_terms(tools.into_iter().filter_map(|(source, item)| {
            let name = item.shared_key()?;
            let terms = ToolTerms::read(&name, &source, &item);
            let source = Arc::from(source);
            Some((source, name, item, terms))
        }))
    }

    /// Indexes `(source, name, item, words)`: tools whose words were read
    /// before ([`ToolTerms::read`]), so that a catalogue change reads only
    /// the tools that changed. Of two tools of one name, the first is kept.
    pub(crate) fn with_terms(tools: impl IntoIterator<Item = ReadTool>) -> Self {
        let mut given: Vec<_> = tools.into_iter().map(Some).collect();
        fn name_of(tool: &Option<ReadTool>) -> &str {
            tool.as_ref().map_or("", |(_, name, _, _)| &**name)
        }
        // By name, and by position among equal names (a stable sort).
        let mut order: Vec<u32> = (0..given.len() as u32).collect();
        order.sort_by(|a, b| name_of(&given[*a as usize]).cmp(name_of(&given[*b as usize])));
        let mut later = vec![false; given.len()];
        for pair in order.windows(2) {
            if name_of(&given[pair[0] as usize]) == name_of(&given[pair[1] as usize]) {
                later[pair[1] as usize] = true;
            }
        }
        let mut index = Self::default();
        let mut position = vec![u32::MAX; given.len()];
        let mut words = Vec::new();
        for (at, tool) in given.iter_mut().enumerate() {
            if later[at] {
                continue;
            }
            let Some((source, name, item, terms)) = tool.take() else {
                continue;
            };
            position[at] = index.tools.len() as u32;
            index.lengths.push(terms.0.length);
            index.tools.push(IndexedTool {
                name,
                source,
                tool: item,
            });
            words.push(terms);
        }
        index.by_name = order
            .into_iter()
            .map(|at| position[at as usize])
            .filter(|&p| p != u32::MAX)
            .collect();
        // Number the terms and count each one's postings, then lay them
        // out term after term.
        // Sized up front: growing a map of every term re-hashes them all.
        let total = words.iter().map(|terms| terms.0.weights.len()).sum();
        let mut numbers: HashMap<&str, u32> = HashMap::with_capacity(total / 2);
        let mut counts: Vec<u32> = Vec::new();
        let mut occurrences: Vec<u32> = Vec::with_capacity(total);
        for terms in &words {
            for (term, _) in terms.iter() {
                let next = counts.len() as u32;
                let number = *numbers.entry(term).or_insert(next);
                if number == next {
                    counts.push(0);
                }
                counts[number as usize] += 1;
                occurrences.push(number);
            }
        }
        // Each term's next free slot: its start, then its end once written.
        let mut slots = Vec::with_capacity(counts.len());
        let mut total = 0;
        for count in &counts {
            slots.push(total);
            total += count;
        }
        index.postings = vec![(0, 0.0); total as usize];
        let mut occurrence = occurrences.iter();
        for (tool, terms) in words.iter().enumerate() {
            for ((_, weight), number) in terms.iter().zip(&mut occurrence) {
                let slot = &mut slots[*number as usize];
                index.postings[*slot as usize] = (tool as u32, weight);
                *slot += 1;
            }
        }
        index.terms = numbers
            .into_iter()
            .map(|(term, number)| {
                let end = slots[number as usize];
                let start = end - counts[number as usize];
                (Box::from(term), Span { start, end })
            })
            .collect();
        index.tools.shrink_to_fit();
        index.lengths.shrink_to_fit();
        index.words = words;
        index.norms = index.norms();
        index
    }

    /// The index of `tools`, as [`with_terms`](Self::with_terms) makes
    /// it, made from `previous` when most of them are indexed there: a tool
    /// of the same reading keeps its postings, and only the others' words
    /// are looked up. A catalogue change of a few tools among thousands
    /// then costs a pass over the postings, not a lookup of every word;
    /// with the same tools, it is `previous` itself.
    pub(crate) fn after(previous: &Arc<Self>, tools: Vec<ReadTool>) -> Arc<Self> {
        let Some(from) = previous.carried(&tools) else {
            return Arc::new(Self::with_terms(tools));
        };
        let unchanged = from.len() == previous.tools.len()
            && tools.iter().zip(&previous.tools).enumerate().all(
                |(at, ((source, name, item, _), old))| {
                    from[at] as usize == at
                        && old.name == *name
                        && old.source == *source
                        && old.tool == *item
                },
            );
        if unchanged {
            return previous.clone();
        }
        Arc::new(previous.carrying(tools, &from))
    }

    /// For each of `tools`, its position here if it is indexed here (the
    /// same reading; `u32::MAX` if not); `None` when too many are not.
    fn carried(&self, tools: &[ReadTool]) -> Option<Vec<u32>> {
        let mut from = vec![u32::MAX; tools.len()];
        let mut taken = vec![false; self.tools.len()];
        let mut new = 0;
        // A source keeps its order: the next tool is tried before a lookup.
        let mut next = 0;
        let mut by_reading: Option<HashMap<*const Terms, usize>> = None;
        for (at, (_, _, _, terms)) in tools.iter().enumerate() {
            let found = match self.words.get(next) {
                Some(words) if words.is(terms) => Some(next),
                _ => by_reading
                    .get_or_insert_with(|| {
                        let readings = self.words.iter().map(|w| Arc::as_ptr(&w.0));
                        readings.enumerate().map(|(at, r)| (r, at)).collect()
                    })
                    .get(&Arc::as_ptr(&terms.0))
                    .copied(),
            };
            match found {
                Some(old) if !taken[old] => {
                    taken[old] = true;
                    from[at] = old as u32;
                    next = old + 1;
                }
                _ => new += 1,
            }
        }
        (new <= tools.len() / 4 + 16).then_some(from)
    }

    /// The index of `tools`, where `from` gives the position here of those
    /// indexed here.
    fn carrying(&self, tools: Vec<ReadTool>, from: &[u32]) -> Self {
        let name = |at: u32| &*tools[at as usize].1;
        // By name: the carried tools in the order they had here, the new
        // ones merged in. A name twice is left to the full build, which
        // decides which of them stays, and so is a carried tool renamed.
        let mut moved = vec![u32::MAX; self.tools.len()];
        let mut new = Vec::new();
        for (at, &old) in from.iter().enumerate() {
            match old {
                u32::MAX => new.push(at as u32),
                old => moved[old as usize] = at as u32,
            }
        }
        new.sort_by(|a, b| name(*a).cmp(name(*b)));
        let mut by_name = Vec::with_capacity(tools.len());
        let mut new_by_name = new.iter().copied().peekable();
        let carried_by_name = self.by_name.iter().map(|&old| moved[old as usize]);
        for carried in carried_by_name.filter(|&at| at != u32::MAX) {
            while let Some(&at) = new_by_name.peek() {
                if name(at) > name(carried) {
                    break;
                }
                by_name.push(at);
                new_by_name.next();
            }
            by_name.push(carried);
        }
        by_name.extend(new_by_name);
        if by_name
            .windows(2)
            .any(|pair| name(pair[0]) >= name(pair[1]))
        {
            return Self::with_terms(tools);
        }
        let mut index = Self {
            by_name,
            ..Self::default()
        };
        for (source, name, item, terms) in tools {
            index.lengths.push(terms.0.length);
            index.tools.push(IndexedTool {
                name,
                source,
                tool: item,
            });
            index.words.push(terms);
        }
        let mut added: HashMap<&str, Vec<(u32, f32)>> = HashMap::new();
        for &at in &new {
            for (term, weight) in index.words[at as usize].iter() {
                added.entry(term).or_default().push((at, weight));
            }
        }
        let (terms, postings) = self.moved_postings(&moved, added);
        index.terms = terms;
        index.postings = postings;
        index.norms = index.norms();
        index
    }

    /// The postings of this index's terms for the tools `moved` keeps (old
    /// position → new one, `u32::MAX` for one not kept), with `added`'s:
    /// the term map and the postings of another index.
    fn moved_postings(
        &self,
        moved: &[u32],
        mut added: HashMap<&str, Vec<(u32, f32)>>,
    ) -> (TermSpans, Vec<(u32, f32)>) {
        let mut terms = HashMap::with_capacity(self.terms.len() + added.len());
        let mut postings = Vec::with_capacity(self.postings.len());
        // A term's postings may be in any order: a score sums them by tool.
        let mut lay = |term: Box<str>, kept: &[(u32, f32)], more: Option<Vec<(u32, f32)>>| {
            let start = postings.len() as u32;
            postings.extend(kept.iter().filter_map(|&(id, weight)| {
                let id = moved[id as usize];
                (id != u32::MAX).then_some((id, weight))
            }));
            postings.extend(more.into_iter().flatten());
            let end = postings.len() as u32;
            if end > start {
                terms.insert(term, Span { start, end });
            }
        };
        for (term, span) in &self.terms {
            let kept = &self.postings[span.start as usize..span.end as usize];
            let more = added.remove(&**term);
            lay(term.clone(), kept, more);
        }
        for (term, more) in added {
            lay(Box::from(term), &[], Some(more));
        }
        postings.shrink_to_fit();
        (terms, postings)
    }

    fn norms(&self) -> Vec<f32> {
        let total: f32 = self.lengths.iter().sum();
        let average = if self.tools.is_empty() {
            1.0
        } else {
            (total / self.tools.len() as f32).max(1.0)
        };
        self.lengths
            .iter()
            .map(|length| K1 * (1.0 - B + B * length / average))
            .collect()
    }

    /// The postings of `term`, if any tool has it.
    fn postings_of(&self, term: &str) -> Option<&[(u32, f32)]> {
        let span = self.terms.get(term)?;
        Some(&self.postings[span.start as usize..span.end as usize])
    }

    /// This index with only the tools `keep` keeps: the words of each are
    /// not read again.
    pub fn retain(&self, keep: impl Fn(&IndexedTool) -> bool) -> Self {
        let mut index = Self::default();
        // Old position → new one, for the tools kept.
        let mut moved = vec![u32::MAX; self.tools.len()];
        for (old, tool) in self.tools.iter().enumerate() {
            if keep(tool) {
                moved[old] = index.tools.len() as u32;
                index.tools.push(tool.clone());
                index.words.push(self.words[old].clone());
                index.lengths.push(self.lengths[old]);
            }
        }
        index.by_name = self
            .by_name
            .iter()
            .map(|&old| moved[old as usize])
            .filter(|&new| new != u32::MAX)
            .collect();
        (index.terms, index.postings) = self.moved_postings(&moved, HashMap::new());
        index.norms = index.norms();
        index
    }

    /// Every tool, in the order given.
    pub fn tools(&self) -> &[IndexedTool] {
        &self.tools
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tool listed under this name.
    pub fn get(&self, name: &str) -> Option<&IndexedTool> {
        self.position(name).map(|i| &self.tools[i])
    }

    fn position(&self, name: &str) -> Option<usize> {
        let found = self
            .by_name
            .binary_search_by(|&i| (*self.tools[i as usize].name).cmp(name));
        found.ok().map(|at| self.by_name[at] as usize)
    }

    /// The best `limit` tools for a query: an exact name first, every
    /// name a glob matches when the query is a pattern (`*`, `?`), else
    /// by relevance to the words of the query.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let query = query.trim();
        if limit == 0 || query.is_empty() {
            return Vec::new();
        }
        if let Some(index) = self.position(query) {
            return vec![Hit {
                index,
                score: f32::INFINITY,
            }];
        }
        if query.contains(['*', '?']) && !query.contains(char::is_whitespace) {
            return self
                .tools
                .iter()
                .enumerate()
                .filter(|(_, t)| glob_matches(query, &t.name))
                .take(limit)
                .map(|(index, _)| Hit { index, score: 1.0 })
                .collect();
        }
        self.rank(query, limit)
    }

    fn rank(&self, query: &str, limit: usize) -> Vec<Hit> {
        let n = self.tools.len() as f32;
        let mut scores = vec![0.0f32; self.tools.len()];
        for (term, weight) in query_terms(query) {
            let Some(postings) = self.postings_of(&term) else {
                continue;
            };
            let df = postings.len() as f32;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            let term_weight = weight * idf * (K1 + 1.0);
            for &(doc, tf) in postings {
                scores[doc as usize] += term_weight * tf / (tf + self.norms[doc as usize]);
            }
        }
        // The best `limit` by score, then by position, kept in order while
        // the scores are read: a common word scores most of a large
        // catalogue, and sorting those cost more than scoring them. Scores
        // are read by position, so an equal score never beats a kept one.
        let mut hits: Vec<Hit> = Vec::with_capacity(limit + 1);
        for (index, score) in scores.into_iter().enumerate() {
            let full = hits.len() == limit;
            if score.is_nan() || score <= 0.0 || (full && score <= hits[limit - 1].score) {
                continue;
            }
            let at = hits.partition_point(|h| h.score >= score);
            hits.insert(at, Hit { index, score });
            hits.truncate(limit);
        }
        hits
    }
}

/// How much a word found through [`RELATED`] counts against the word
/// the user wrote.
const RELATED_WEIGHT: f32 = 0.5;

/// The terms of a query with their weights: its own words, then the
/// words tools use for the same things.
fn query_terms(query: &str) -> Vec<(String, f32)> {
    let own: Vec<String> = terms(query)
        .into_iter()
        .filter(|t| !QUERY_STOP_WORDS.contains(&t.as_str()))
        .collect();
    let mut out: Vec<(String, f32)> = Vec::new();
    let mut push = |term: String, weight: f32| match out.iter_mut().find(|(t, _)| *t == term) {
        Some((_, w)) => *w = w.max(weight),
        None => out.push((term, weight)),
    };
    for term in &own {
        push(term.clone(), 1.0);
    }
    let related = related();
    for term in &own {
        for other in related.get(term).into_iter().flatten() {
            push(other.clone(), RELATED_WEIGHT);
        }
    }
    out
}

/// Words people use in a request that say little about which tool they
/// want (stemmed).
const QUERY_STOP_WORDS: &[&str] = &[
    "show", "right", "now", "let", "tell", "just", "like", "someth", "someon",
];

/// Everyday words → the words tool names and descriptions use for the
/// same thing (API and MCP vocabulary). Expanded at query time only.
const RELATED: &[(&str, &str)] = &[
    ("picture photo drawing draw paint", "image"),
    ("draw paint", "generate"),
    ("aloud speak say narrate pronounce", "speech tts audio"),
    ("recording podcast clip sound", "audio"),
    ("transcribe dictation subtitles", "transcription audio"),
    ("folder", "directory"),
    ("remember memorize note", "entity observation"),
    ("know knowledge", "graph entity"),
    ("forget remove uninstall erase drop", "delete"),
    ("vector vectors semantic", "embedding"),
    ("download", "install apply"),
    ("install", "apply"),
    ("sharper bigger enlarge resolution", "upscale"),
    ("continue autocomplete", "completion"),
    ("conversation chat ask question answer", "chat completion"),
    ("token tokens", "tokenize"),
    ("personal private sensitive email phone", "pii"),
    ("offensive harmful toxic abusive", "moderation"),
    ("noise", "transform"),
    ("order sort relevance rank passages", "rerank"),
    ("talking speaking", "voice speaker"),
    ("cars people objects things", "detection object"),
    ("far distance", "depth"),
    ("age gender", "analyze face"),
    ("effect", "sound generation"),
    ("disable enable off", "toggle"),
    ("alternative nickname", "alias"),
    ("newer update", "upgrade"),
    ("open contents view", "read"),
    ("save store", "write"),
    ("rename", "move"),
    ("monitoring dashboard prometheus", "metrics"),
    ("crash crashed", "logs"),
    ("gpu", "vram"),
    ("stop abort", "cancel"),
    ("machines cluster peer", "p2p node"),
    ("enroll", "register"),
    ("colleague colleagues relationship related", "relation"),
    ("dump everything", "entire"),
    ("disk", "file"),
    ("environment", "env"),
    ("add plus total", "sum"),
    ("timezone city", "time"),
    ("video movie", "video"),
    ("speed fast", "metrics"),
];

fn related() -> &'static HashMap<String, Vec<String>> {
    static RELATED_TERMS: std::sync::OnceLock<HashMap<String, Vec<String>>> =
        std::sync::OnceLock::new();
    RELATED_TERMS.get_or_init(|| {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for (everyday, technical) in RELATED {
            let technical = terms(technical);
            for word in terms(everyday) {
                let entry = map.entry(word.clone()).or_default();
                entry.extend(technical.iter().filter(|t| **t != word).cloned());
            }
        }
        map
    })
}

/// The words of a text as the index keeps them: split at anything not a
/// letter or digit, at camelCase humps and letter/digit boundaries,
/// lowercased, common words dropped, light suffixes stripped.
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in split_words(text) {
        let lower = word.to_lowercase();
        if STOP_WORDS.contains(&lower.as_str()) {
            continue;
        }
        out.push(stem(&lower));
    }
    out
}

fn split_words(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        let mut start = 0;
        let chars: Vec<(usize, char)> = chunk.char_indices().collect();
        for i in 1..chars.len() {
            let (at, c) = chars[i];
            let prev = chars[i - 1].1;
            let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next_lower)
                || (prev.is_alphabetic() && c.is_numeric())
                || (prev.is_numeric() && c.is_alphabetic());
            if boundary {
                words.push(&chunk[start..at]);
                start = at;
            }
        }
        if start < chunk.len() {
            words.push(&chunk[start..]);
        }
    }
    words
}

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "i", "if", "in", "into", "is",
    "it", "its", "me", "my", "of", "on", "or", "so", "that", "the", "this", "to", "want", "was",
    "what", "which", "with", "you", "your", "can", "do", "does", "how", "some", "please", "need",
];

/// A light stemmer (plural and verb endings, a final `e`, a doubled
/// consonant), applied alike to tools and queries, so that `images`,
/// `image`, `created`, `creating` and `embeddings` meet their other forms.
fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.is_ascii() {
        return word.to_owned();
    }
    let mut w = word.to_owned();
    if let Some(s) = w.strip_suffix("ies") {
        w = format!("{s}y");
    } else if w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if let Some(s) = ["ing", "ed"]
        .iter()
        .find_map(|suffix| w.strip_suffix(suffix))
        .filter(|s| s.len() >= 3)
    {
        w = s.to_owned();
        let b = w.as_bytes();
        let n = b.len();
        if b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'l' | b's' | b'z' | b'e') {
            w.pop();
        }
    } else if w.ends_with("es")
        && ["ses", "xes", "zes", "ches", "shes"]
            .iter()
            .any(|e| w.ends_with(e))
    {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !["ss", "us", "is"].iter().any(|e| w.ends_with(e)) {
        w.pop();
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

/// `*` matches any run of characters, `?` any one; everything else itself.
pub(crate) fn glob_matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            backtrack = Some((pi, ni));
            pi += 1;
        } else if let Some((bp, bn)) = backtrack {
            pi = bp + 1;
            ni = bn + 1;
            backtrack = Some((bp, bn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use foldhash::HashSet;
    use serde_json::json;

    fn index() -> ToolIndex {
        ToolIndex::new([
            (
                "files".into(),
                ListItem::tool(
                    &json!({"name": "files__read_text_file", "description": "Read a file as text",
                       "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}),
                ),
            ),
            (
                "clock".into(),
                ListItem::tool(
                    &json!({"name": "clock__get_current_time", "description": "Current time in a timezone",
                       "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA name"}}}}),
                ),
            ),
            (
                "api".into(),
                ListItem::tool(
                    &json!({"name": "api__createImageGeneration", "description": "Makes pictures from a prompt"}),
                ),
            ),
        ])
    }

    #[test]
    fn words_split_at_case_digits_and_punctuation() {
        assert_eq!(
            terms("getCurrentTime v1/images HTTPServer2x"),
            ["get", "current", "tim", "v", "1", "imag", "http", "server", "2", "x"]
        );
    }

    #[test]
    fn exact_names_win_and_words_rank() {
        let index = index();
        let hits = index.search("clock__get_current_time", 5);
        assert_eq!(hits.len(), 1);
        assert_eq!(
            &*index.tools()[hits[0].index].name,
            "clock__get_current_time"
        );
        let hits = index.search("what time is it in Tokyo (timezone)", 5);
        assert_eq!(&*index.tools()[hits[0].index].source, "clock");
        let hits = index.search("generate images", 5);
        assert_eq!(
            &*index.tools()[hits[0].index].name,
            "api__createImageGeneration"
        );
        assert!(index.search("zzz", 5).is_empty());
    }

    #[test]
    fn a_retained_index_ranks_as_one_built_from_the_tools_kept() {
        let all = index();
        let kept = all.retain(|t| &*t.source != "files");
        let built = ToolIndex::new(
            all.tools()
                .iter()
                .filter(|t| &*t.source != "files")
                .map(|t| (t.source.to_string(), t.tool.clone())),
        );
        assert_eq!(kept.len(), 2);
        assert!(kept.get("files__read_text_file").is_none());
        for query in [
            "current time",
            "timezone name",
            "pictures",
            "read a file",
            "get",
        ] {
            let names = |index: &ToolIndex| {
                index
                    .search(query, 5)
                    .iter()
                    .map(|h| (index.tools()[h.index].name.to_string(), h.score))
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(&kept), names(&built), "{query}");
        }
        assert_eq!(
            kept.get("clock__get_current_time").map(|t| &*t.source),
            Some("clock")
        );
    }

    /// Tools of a small vocabulary, read: (source, name, item, words).
    fn read_tools(numbers: std::ops::Range<usize>, description: &str) -> Vec<ReadTool> {
        const WORDS: [&str; 8] = [
            "invoice", "customer", "order", "ticket", "refund", "report", "alert", "user",
        ];
        numbers
            .map(|i| {
                let source = format!("svc{}", i % 7);
                let name = format!("{source}__{}_{}_{i}", WORDS[i % 8], WORDS[(i / 8) % 8]);
                let words = format!(
                    "{description} {} {}",
                    WORDS[(i * 3) % 8],
                    WORDS[(i * 5) % 8]
                );
                let item = ListItem::tool(&json!({"name": name, "description": words}));
                let terms = ToolTerms::read(&name, &source, &item);
                (source.into(), name.into(), item, terms)
            })
            .collect()
    }

    /// Both indexes answer every query alike and hold the same tools.
    fn assert_same(made: &ToolIndex, built: &ToolIndex) {
        let names = |index: &ToolIndex| -> Vec<String> {
            index.tools().iter().map(|t| t.name.to_string()).collect()
        };
        assert_eq!(names(made), names(built));
        for tool in built.tools() {
            assert_eq!(made.get(&tool.name).map(|t| &t.source), Some(&tool.source));
        }
        for query in [
            "invoice refund",
            "customer alert report",
            "changed",
            "svc3",
            "user order ticket",
            "svc2__*",
        ] {
            let hits = |index: &ToolIndex| -> Vec<(String, f32)> {
                let hits = index.search(query, 10);
                hits.iter()
                    .map(|h| (index.tools()[h.index].name.to_string(), h.score))
                    .collect()
            };
            assert_eq!(hits(made), hits(built), "{query}");
        }
    }

    #[test]
    fn an_index_made_from_the_previous_one_is_the_index_built_anew() {
        let first = read_tools(0..200, "first");
        let previous = Arc::new(ToolIndex::with_terms(first.clone()));

        // The same tools: the same index.
        assert!(Arc::ptr_eq(
            &ToolIndex::after(&previous, first.clone()),
            &previous
        ));

        // A few changed, in the source's order or another; one new tool
        // takes an old one's name (the first of the two stays).
        let changed = read_tools(200..203, "changed");
        let mut edits: Vec<Vec<ReadTool>> = Vec::new();
        let mut some = first.clone();
        some.remove(50);
        some[10] = changed[0].clone();
        some.insert(120, changed[1].clone());
        some.push(changed[2].clone());
        edits.push(some.clone());
        some.reverse();
        edits.push(some.clone());
        let mut twice = first.clone();
        let mut renamed = changed[0].clone();
        renamed.1 = first[30].1.clone();
        twice.insert(5, renamed);
        edits.push(twice);
        // Too many changed: built anew.
        edits.push(read_tools(0..200, "changed"));
        for (at, tools) in edits.into_iter().enumerate() {
            assert_eq!(previous.carried(&tools).is_some(), at < 3, "edit {at}");
            // The first two keep their postings; the third names a tool twice.
            let names =
                |tools: &[ReadTool]| tools.iter().map(|t| t.1.clone()).collect::<HashSet<_>>();
            assert_eq!(names(&tools).len() == tools.len(), at != 2, "edit {at}");
            let made = ToolIndex::after(&previous, tools.clone());
            assert_same(&made, &ToolIndex::with_terms(tools));
        }
    }

    #[test]
    fn patterns_match_names() {
        let index = index();
        let names: Vec<_> = index
            .search("*__get_*", 5)
            .iter()
            .map(|h| index.tools()[h.index].name.to_string())
            .collect();
        assert_eq!(names, ["clock__get_current_time"]);
        assert!(glob_matches("a?c*", "abcdef"));
        assert!(!glob_matches("a?c", "abcd"));
        assert!(glob_matches("*", ""));
    }
}
