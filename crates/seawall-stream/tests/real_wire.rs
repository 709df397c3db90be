//! Real provider wire shapes, read as the providers document them.
//!
//! Every fixture under `fixtures/real/` is a stream a provider sent (or
//! its documentation shows), kept byte for byte where it was recorded as
//! SSE, or with its recorded event data framed as the provider frames it
//! (`event: <type>` for Anthropic and the Responses API, `data: …\r\n\r\n`
//! for Gemini, `data: …` and `[DONE]` for OpenAI chat):
//!
//! - `openai/python_*`: openai-python's `.inline-snapshot/external/*.bin`,
//!   recorded from api.openai.com for `tests/lib/chat/test_completions_streaming.py`.
//! - `anthropic/sdk_*`: anthropic-sdk-python's `tests/lib/streaming/fixtures/*.txt`.
//! - `*/vercel_*`: vercel/ai's recorded provider chunks,
//!   `packages/{openai,anthropic,google}/src/**/__fixtures__/*.chunks.txt`.
//! - `openai/openrouter_*`: OpenRouter's chunks as reported from its API
//!   (speakeasy-api/gram#921: the usage in a chunk of its own after the
//!   finish, beside a choice with no finish), ids and usage details cut.
//! - `*/docs_*`: the shapes the providers' docs show (Anthropic's extended
//!   thinking, citations, stop-reason and web-search pages; Gemini's
//!   thinking, code-execution, grounding and `FinishReason` reference; the
//!   Responses API's streaming-events reference; OpenAI's audio guide).
//!
//! The expected values (the text a client shows, the finish, the usage)
//! were read from each fixture independently of seawall, by the
//! providers' documented meaning.

mod common;

use common::*;
use seawall_core::{Action, ClosedBy, Code, FinishKind, Usage};

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!("fixtures/real/", $path))
    };
}

/// One recorded answer and what its provider says it is.
struct Case {
    path: &'static str,
    fixture: &'static str,
    /// The finish reason as the provider sent it.
    reason: &'static str,
    kind: FinishKind,
    /// The provider's own count (Anthropic's input with its cache reads
    /// and writes, Gemini's with its tool-use prompt and thoughts).
    usage: Option<Usage>,
    /// The text a client holds when the stream is cut right before the
    /// event that finishes it.
    before_finish: Option<&'static str>,
    /// The answer holds a tool call or another act, not text alone.
    act: bool,
}

fn name(case: &Case) -> String {
    // The first event's first line names the fixture well enough.
    case.fixture
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(140)
        .collect()
}

/// The events of an SSE body, each with where it starts.
fn events(body: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let normal = body.replace("\r\n", "\n");
    // Offsets are taken on the original text: walk both.
    let mut original = 0;
    for block in normal.split_inclusive("\n\n") {
        let data: Vec<&str> = block
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if !data.is_empty() {
            out.push((original, data.join("\n")));
        }
        let crlf = body[original..].starts_with(&block.replace('\n', "\r\n"));
        original += if crlf {
            block.len() + block.matches('\n').count()
        } else {
            block.len()
        };
    }
    out
}

/// Where the event that finishes the message starts.
fn finish_at(path: &str, body: &str) -> usize {
    for (at, data) in events(body) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&data) else {
            continue;
        };
        let finishes = match path {
            CHAT => v["choices"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["finish_reason"].is_string())),
            MESSAGES => v["type"] == "message_delta",
            GEMINI => v["candidates"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["finishReason"].is_string())),
            _ => matches!(
                v["type"].as_str(),
                Some("response.completed" | "response.incomplete")
            ),
        };
        if finishes {
            return at;
        }
    }
    panic!("no finishing event in {}", &body[..body.len().min(200)]);
}

/// What seawall's reading of `case` gets wrong, if anything.
async fn misreads(case: &Case) -> Vec<String> {
    let mut wrong = Vec::new();
    let d = match run(case.path, case.fixture).await {
        Outcome::Delivered(d) => d,
        Outcome::Failed(f) => return vec![format!("failed before content: {f:?}")],
    };
    match &d.report.finish {
        Some(finish) if finish.kind == case.kind && &*finish.reason == case.reason => {}
        other => wrong.push(format!(
            "finish {other:?}, the provider's is {:?} {}",
            case.kind, case.reason
        )),
    }
    if d.report.usage != case.usage {
        wrong.push(format!(
            "usage {:?}, the provider's is {:?}",
            d.report.usage, case.usage
        ));
    }
    if d.report.closed_by != ClosedBy::Them {
        wrong.push(format!("closed by {:?}", d.report.closed_by));
    }
    match case.kind.failure() {
        None => {
            if let Some(error) = &d.error {
                wrong.push(format!("a whole answer ended in error: {error:?}"));
            }
            if d.bytes != case.fixture.as_bytes() {
                wrong.push("not every byte handed on".into());
            }
            if d.report.completed_task() != case.kind.completes_task() {
                wrong.push("completed_task disagrees with the finish".into());
            }
        }
        Some(verdict) => match &d.error {
            Some(error) if error.code() == verdict.code() => {
                if error.provider_code() != Some(case.reason) {
                    wrong.push(format!("provider code {:?}", error.provider_code()));
                }
            }
            other => wrong.push(format!(
                "ended with {other:?}, not the {:?} verdict",
                verdict.code()
            )),
        },
    }
    if (case.before_finish.is_some() || case.act) && d.report.content_events == 0 {
        wrong.push("no content event in an answer".into());
    }
    // Cut right before the finishing event: a cut answer holding what the
    // client holds.
    if let Some(text) = case.before_finish {
        let cut = &case.fixture[..finish_at(case.path, case.fixture)];
        match run(case.path, cut).await {
            Outcome::Delivered(c) => match c.error {
                Some(error) if error.code() == Code::Truncated => {
                    let held = error
                        .interrupted()
                        .and_then(|i| i.delivered_text.clone())
                        .unwrap_or_default();
                    if held != text {
                        wrong.push(format!(
                            "cut before its finish, delivered text {held:?}, the client holds {text:?}"
                        ));
                    }
                }
                other => wrong.push(format!("cut before its finish: {other:?}")),
            },
            Outcome::Failed(f) => wrong.push(format!("cut before its finish failed: {f:?}")),
        }
    }
    wrong
}

async fn check(cases: &[Case]) {
    let mut report = String::new();
    for case in cases {
        for wrong in misreads(case).await {
            report.push_str(&format!("\n{}\n    {wrong}", name(case)));
        }
    }
    assert!(report.is_empty(), "seawall misreads:{report}");
}

#[tokio::test]
async fn real_answers_are_read_as_their_providers_mean_them() {
    check(&[
    Case { path: CHAT, fixture: fixture!("openai/docs_audio.sse"), reason: "stop", kind: FinishKind::Complete, usage: Some(Usage::new(17, 45)), before_finish: None, act: true },
    Case { path: CHAT, fixture: fixture!("openai/openrouter_usage_after_finish.sse"), reason: "stop", kind: FinishKind::Complete, usage: Some(Usage::new(1697, 52)), before_finish: Some("Hi"), act: false },
    Case { path: CHAT, fixture: fixture!("openai/python_content_logprobs.sse"), reason: "stop", kind: FinishKind::Complete, usage: Some(Usage::new(9, 2)), before_finish: Some("Foo!"), act: false },
    Case { path: CHAT, fixture: fixture!("openai/python_json_object.sse"), reason: "stop", kind: FinishKind::Complete, usage: Some(Usage::new(19, 177)), before_finish: Some("\n  {\n    \"location\": \"San Francisco, CA\",\n    \"weather\": {\n      \"temperature\": \"18°C\",\n      \"condition\": \"Partly Cloudy\",\n      \"humidity\": \"72%\",\n      \"windSpeed\": \"15 km/h\",\n      \"windDirection\": \"NW\"\n    },\n    \"forecast\": [\n      {\n        \"day\": \"Monday\",\n        \"high\": \"20°C\",\n        \"low\": \"14°C\",\n        \"condition\": \"Sunny\"\n      },\n      {\n        \"day\": \"Tuesday\",\n        \"high\": \"19°C\",\n        \"low\": \"15°C\",\n        \"condition\": \"Mostly Cloudy\"\n      },\n      {\n        \"day\": \"Wednesday\",\n        \"high\": \"18°C\",\n        \"low\": \"14°C\",\n        \"condition\": \"Cloudy\"\n      }\n    ]\n  }\n"), act: false },
    Case { path: CHAT, fixture: fixture!("openai/python_max_tokens_1.sse"), reason: "length", kind: FinishKind::Truncated, usage: Some(Usage::new(79, 1)), before_finish: Some("{\""), act: false },
    Case { path: CHAT, fixture: fixture!("openai/python_non_strict_tool.sse"), reason: "tool_calls", kind: FinishKind::Complete, usage: Some(Usage::new(44, 16)), before_finish: None, act: true },
    Case { path: CHAT, fixture: fixture!("openai/python_parse_nothing.sse"), reason: "stop", kind: FinishKind::Complete, usage: Some(Usage::new(14, 30)), before_finish: Some("I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app."), act: false },
    Case { path: CHAT, fixture: fixture!("openai/python_pydantic_tool.sse"), reason: "tool_calls", kind: FinishKind::Complete, usage: Some(Usage::new(76, 24)), before_finish: None, act: true },
    Case { path: CHAT, fixture: fixture!("openai/python_strict_tool.sse"), reason: "tool_calls", kind: FinishKind::Complete, usage: Some(Usage::new(48, 19)), before_finish: None, act: true },
    Case { path: CHAT, fixture: fixture!("openai/python_structured_output.sse"), reason: "stop", kind: FinishKind::Complete, usage: Some(Usage::new(79, 14)), before_finish: Some("{\"city\":\"San Francisco\",\"temperature\":61,\"units\":\"f\"}"), act: false },
    Case { path: CHAT, fixture: fixture!("openai/python_two_tools.sse"), reason: "tool_calls", kind: FinishKind::Complete, usage: Some(Usage::new(149, 60)), before_finish: None, act: true },
    Case { path: CHAT, fixture: fixture!("openai/vercel_azure_model_router.sse"), reason: "stop", kind: FinishKind::Complete, usage: Some(Usage::new(15, 78)), before_finish: Some("Capital of Denmark."), act: false },
    Case { path: CHAT, fixture: fixture!("openai/vercel_openai_text.sse"), reason: "stop", kind: FinishKind::Complete, usage: Some(Usage::new(16, 300)), before_finish: Some("**Holiday Name:** Harmony Day\n\n**Date:** Celebrated annually on the first Saturday of May\n\n**Purpose:** Harmony Day is dedicated to fostering understanding, kindness, and unity among diverse communities. It emphasizes celebrating cultural differences while promoting empathy and collaboration.\n\n**Traditions:**\n\n1. **Cultural Potluck Gatherings:** Communities come together to share traditional dishes from their backgrounds, encouraging conversation and curiosity about different cultures.\n\n2. **Story Circles:** People of all ages are encouraged to share stories from their heritage or personal experiences that promote understanding and empathy.\n\n3. **Decorate for Unity:** Public spaces and homes are decorated with symbols representing different cultures—flags, traditional art, and meaningful motifs—to visually celebrate diversity.\n\n4. **Collaborative Art Projects:** Communities create murals or sculptures that symbolize unity and diversity, involving artists and residents of all ages.\n\n5. **Acts of Kindness:** As a central activity, participants perform Small acts of kindness throughout the day, such as volunteering, helping neighbors, or inviting someone new to join festivities.\n\n6. **Music & Dance Festivals:** Local performances showcase a variety of musical styles and dances from different parts of the world, emphasizing shared joy and creativity.\n\n7. **Educational Workshops:** Interactive sessions teach about various cultures’ histories, traditions, and celebrations, fostering respect and knowledge.\n\n**Overall Spirit:** Harmony Day aims to create a sense of global community, reminding everyone that despite our differences, we are all connected through shared human experiences and mutual respect."), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/docs_citations.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(610, 12)), before_finish: Some("The grass is green."), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/docs_context_window_exceeded.sse"), reason: "model_context_window_exceeded", kind: FinishKind::Truncated, usage: Some(Usage::new(199000, 1000)), before_finish: Some("The report covers"), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/docs_pause_turn.sse"), reason: "pause_turn", kind: FinishKind::Truncated, usage: Some(Usage::new(10682, 510)), before_finish: None, act: true },
    Case { path: MESSAGES, fixture: fixture!("anthropic/docs_redacted_thinking.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(73, 98)), before_finish: Some("I cannot share my reasoning here, but the answer is 42."), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/docs_refusal_mid_stream.sse"), reason: "refusal", kind: FinishKind::Refused, usage: Some(Usage::new(20, 4)), before_finish: Some("Here is how"), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/docs_thinking.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: None, before_finish: Some("27 * 453 = 12,231"), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/docs_thinking_omitted.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(40, 320)), before_finish: Some("The greatest common divisor of 1071 and 462 is **21**."), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/sdk_basic.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(11, 6)), before_finish: Some("Hello there!"), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/sdk_compaction.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(30, 8)), before_finish: Some("Hello there!"), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/sdk_fallback.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(25, 8)), before_finish: Some("Hello there!"), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/sdk_incomplete_partial_json.sse"), reason: "max_tokens", kind: FinishKind::Truncated, usage: Some(Usage::new(450, 124)), before_finish: Some("I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now."), act: true },
    Case { path: MESSAGES, fixture: fixture!("anthropic/sdk_server_tool_result.sse"), reason: "tool_use", kind: FinishKind::Complete, usage: Some(Usage::new(50, 20)), before_finish: None, act: true },
    Case { path: MESSAGES, fixture: fixture!("anthropic/sdk_server_tool_use.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(42, 40)), before_finish: Some("Let me search for that."), act: true },
    Case { path: MESSAGES, fixture: fixture!("anthropic/sdk_tool_use.sse"), reason: "tool_use", kind: FinishKind::Complete, usage: Some(Usage::new(377, 65)), before_finish: Some("I'll check the current weather in Paris for you."), act: true },
    Case { path: MESSAGES, fixture: fixture!("anthropic/vercel_advisor_stop_reasons.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(10, 20)), before_finish: None, act: true },
    Case { path: MESSAGES, fixture: fixture!("anthropic/vercel_clear_thinking.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(69, 53)), before_finish: Some("925 ÷ 5 = 185"), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/vercel_code_execution_20250825.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(8050, 771)), before_finish: Some("I'll create a Python script to calculate Fibonacci numbers and then execute it to find the 10th Fibonacci number.Now let's execute the script to find the 10th Fibonacci number:Perfect! The script has been created and executed successfully. \n\n**Result: The 10th Fibonacci number is 34**\n\nThe script includes:\n1. An **iterative function** (`fibonacci`) - efficient and fast, suitable for larger numbers\n2. A **recursive function** (`fibonacci_recursive`) - simpler but less efficient for large values\n3. The main execution block that calculates and displays the 10th Fibonacci number\n4. A bonus display showing all Fibonacci numbers from F(1) to F(10)\n\nThe Fibonacci sequence starts with 0, 1, and each subsequent number is the sum of the previous two numbers: 0, 1, 1, 2, 3, 5, 8, 13, 21, 34, ..."), act: true },
    Case { path: MESSAGES, fixture: fixture!("anthropic/vercel_compaction.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(612 + 60_385, 2819 + 522)), before_finish: Some("Based on the conversation history, you asked me to summarize the key algorithms and data structures from the documentation. Here's a comprehensive summary:\n\n---\n\n# Algorithms & Data Structures Summary\n\n## 📦 Core Data Structures\n\n### Arrays\n- **Fixed-size** (or dynamically resized) contiguous memory blocks\n- **Access**: O(1) by index\n- **Search**: O(n) linear, O(log n) if sorted (binary search)\n- **Insertion/Deletion**: O(n) due to shifting elements\n- Great for random access; less ideal for frequent insertions/removals\n\n### Linked Lists\n- **Singly Linked**: Each node points to the next\n- **Doubly Linked**: Each node points to both next and previous\n- **Insertion/Deletion** at head: O(1)\n- **Search/Access**: O(n) — no random access\n- Useful when you need frequent insertions/deletions and don't need indexing\n\n### Stacks (LIFO)\n- **Push/Pop/Peek**: O(1)\n- Use cases: function call stacks, undo operations, expression evaluation, DFS\n- Can be implemented with arrays or linked lists\n\n### Queues (FIFO)\n- **Enqueue/Dequeue/Peek**: O(1)\n- Use cases: BFS, task scheduling, buffering\n- Variants: **Circular Queue**, **Deque** (double-ended)\n\n### Priority Queues / Heaps\n- Typically implemented as a **binary heap** (min-heap or max-heap)\n- **Insert**: O(log n)\n- **Extract min/max**: O(log n)\n- **Peek**: O(1)\n- Use cases: Dijkstra's algorithm, task scheduling by priority, median finding\n\n### Binary Search Trees (BST)\n- Each node: left child < parent < right child\n- **Average** search/insert/delete: O(log n)\n- **Worst case** (degenerate/skewed): O(n)\n- **Balanced variants**: AVL trees, Red-Black trees → guarantee O(log n)\n- **In-order traversal** yields sorted output\n\n### Hash Tables\n- **Key → hash function → bucket index**\n- **Average** insert/search/delete: O(1)\n- **Worst case** (many collisions): O(n)\n- Collision resolution: **chaining** (linked lists in buckets) or **open addressing** (probing)\n- Use cases: dictionaries, caches, frequency counting, deduplication\n\n### Graphs\n- **Representations**: Adjacency List (space-efficient for sparse) vs. Adjacency Matrix (fast edge lookup)\n- **Types**: Directed/Undirected, Weighted/Unweighted, Cyclic/Acyclic\n- **Key algorithms**:\n  - **BFS** (Breadth-First Search): O(V + E), uses queue — shortest path in unweighted graphs\n  - **DFS** (Depth-First Search): O(V + E), uses stack/recursion — cycle detection, topological sort\n  - **Dijkstra's**: Shortest path in weighted graphs (non-negative weights), O((V + E) log V) with min-heap\n  - **Bellman-Ford**: Handles negative weights, O(V × E)\n  - **Topological Sort**: Linear ordering of DAG vertices\n\n---\n\n## 🔄 Sorting Algorithms\n\n### Quick Sort\n```\nfunction quickSort(arr):\n    if arr.length <= 1: return arr\n    pick pivot (e.g., last element)\n    partition into [less], [equal], [greater]\n    return [...quickSort(less), ...equal, ...quickSort(greater)]\n```\n- **Average**: O(n log n)\n- **Worst** (bad pivot selection): O(n²)\n- **Space**: O(log n) for recursion stack (in-place variant)\n- **Not stable** (by default)\n- In practice, often the fastest general-purpose sort\n\n### Merge Sort\n```\nfunction mergeSort(arr):\n    if arr.length <= 1: return arr\n    split into left half, right half\n    return merge(mergeSort(left), mergeSort(right))\n```\n- **Always**: O(n log n) — guaranteed\n- **Space**: O(n) for the merge step\n- **Stable** sort (preserves relative order of equal elements)\n- Preferred when stability matters or for linked lists\n\n### Heap Sort\n```\nfunction heapSort(arr):\n    buildMaxHeap(arr)\n    for i from end to start:\n        swap arr[0] with arr[i]\n        heapifyDown(arr, 0, i)\n```\n- **Always**: O(n log n)\n- **Space**: O(1) — in-place\n- **Not stable**\n- Useful when guaranteed O(n log n) is needed with O(1) extra space\n\n### Comparison Table\n\n| Algorithm | Best | Average | Worst | Space | Stable? |\n|-----------|------|---------|-------|-------|---------|\n| Quick Sort | O(n log n) | O(n log n) | O(n²) | O(log n) | No |\n| Merge Sort | O(n log n) | O(n log n) | O(n log n) | O(n) | Yes |\n| Heap Sort | O(n log n) | O(n log n) | O(n log n) | O(1) | No |\n\n---\n\n## 🔍 Searching Algorithms\n\n### Binary Search\n```python\ndef binary_search(arr, target):\n    low, high = 0, len(arr) - 1\n    while low <= high:\n        mid = (low + high) // 2\n        if arr[mid] == target:\n            return mid\n        elif arr[mid] < target:\n            low = mid + 1\n        else:\n            high = mid - 1\n    return -1\n```\n- **Prerequisite**: Array must be **sorted**\n- **Time**: O(log n)\n- **Space**: O(1) iterative, O(log n) recursive\n\n### Common Variants\n- **Lower Bound**: Find first occurrence of target (or first element ≥ target)\n- **Upper Bound**: Find last occurrence (or first element > target)\n- **Search in Rotated Sorted Array**: Modified binary search checking which half is sorted\n- **Binary Search on Answer**: Search over the solution space (e.g., \"minimum capacity to ship packages in D days\")\n\n---\n\n## 🧠 Dynamic Programming (DP)\n\nThe core idea: **break problems into overlapping subproblems**, store results to avoid recomputation.\n\nTwo approaches:\n- **Top-Down (Memoization)**: Recursive + cache\n- **Bottom-Up (Tabulation)**: Iterative, build table from base cases\n\n### Classic Problems\n\n#### 1. Fibonacci\n```python\n# Bottom-up O(n) time, O(1) space\ndef fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n```\n\n#### 2. Longest Common Subsequence (LCS)\n```\ndp[i][j] = length of LCS of str1[0..i-1] and str2[0..j-1]\n\nif str1[i-1] == str2[j-1]:\n    dp[i][j] = dp[i-1][j-1] + 1\nelse:\n    dp[i][j] = max(dp[i-1][j], dp[i][j-1])\n```\n- **Time**: O(m × n), **Space**: O(m × n), optimizable to O(min(m, n))\n\n#### 3. 0/1 Knapsack\n```\ndp[i][w] = max value using items 1..i with capacity w\n\ndp[i][w] = max(\n    dp[i-1][w],              // skip item i\n    dp[i-1][w - weight[i]] + value[i]  // take item i\n)\n```\n- **Time**: O(n × W), **Space**: O(n × W), optimizable to O(W)\n\n#### 4. Coin Change (minimum coins)\n```\ndp[amount] = min coins needed to make 'amount'\ndp[0] = 0\n\nfor each coin in coins:\n    for a from coin to target:\n        dp[a] = min(dp[a], dp[a - coin] + 1)\n```\n- **Time**: O(amount × |coins|)\n\n#### 5. Edit Distance (Levenshtein)\n```\ndp[i][j] = min edits to transform str1[0..i-1] → str2[0..j-1]\n\nif str1[i-1] == str2[j-1]:\n    dp[i][j] = dp[i-1][j-1]\nelse:\n    dp[i][j] = 1 + min(\n        dp[i-1][j],      // delete\n        dp[i][j-1],      // insert\n        dp[i-1][j-1]     // replace\n    )\n```\n- **Time**: O(m × n)\n\n---\n\n## 📊 Big O Complexity Reference\n\nFrom fastest to slowest:\n\n| Notation | Name | Example |\n|----------|------|---------|\n| O(1) | Constant | Hash table lookup, array access by index |\n| O(log n) | Logarithmic | Binary search, balanced BST operations |\n| O(n) | Linear | Linear search, single array traversal |\n| O(n log n) | Linearithmic | Merge sort, heap sort, efficient sorting |\n| O(n²) | Quadratic | Bubble sort, nested loops, brute-force pairs |\n| O(n³) | Cubic | Floyd-Warshall, naive matrix multiplication |\n| O(2ⁿ) | Exponential | Recursive Fibonacci (naive), power set generation |\n| O(n!) | Factorial | Generating all permutations, brute-force TSP |\n\n### Key Rules for Analysis\n1. **Drop constants**: O(2n) → O(n)\n2. **Drop lower-order terms**: O(n² + n) → O(n²)\n3. **Different inputs = different variables**: O(n × m), not O(n²)\n4. **Amortized analysis**: Some operations are expensive rarely (e.g., dynamic array resizing is O(1) amortized)\n\n### Space Complexity Matters Too\n- Recursive algorithms: count the **call stack depth**\n- In-place algorithms (like heap sort) use O(1) extra space\n- Memoization/tabulation trade space for time\n\n---\n\n## 🎯 Key Takeaways\n\n1. **Choose data structures based on your access patterns**: Random access → array/hash table; Ordered data → BST; FIFO → queue; LIFO → stack\n\n2. **Sorting**: Quick sort is fastest in practice; Merge sort when stability matters; Heap sort for guaranteed O(n log n) with O(1) space\n\n3. **Binary search** applies far beyond sorted arrays — any monotonic condition over a search space\n\n4. **Dynamic programming** = recursion + memoization (or bottom-up tabulation). Look for **optimal substructure** and **overlapping subproblems**\n\n5. **Always consider the tradeoff**: Time vs. Space, Simplicity vs. Performance, Average case vs. Worst case\n\nThis covers the core algorithms and data structures section from the documentation. Would you like me to dive deeper into any specific algorithm, walk through a particular problem, or cover another section?"), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/vercel_mcp.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(1250, 83)), before_finish: Some("The echo tool responded back with: **hello world**\n\nIt simply echoed back the exact message that was sent to it."), act: true },
    Case { path: MESSAGES, fixture: fixture!("anthropic/vercel_message_delta_input_tokens.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(61, 2)), before_finish: Some("pong"), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/vercel_text.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(12, 30)), before_finish: Some("Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?"), act: false },
    Case { path: MESSAGES, fixture: fixture!("anthropic/vercel_tool_no_args.sse"), reason: "tool_use", kind: FinishKind::Complete, usage: Some(Usage::new(565, 48)), before_finish: Some("I'll update the issue list for you."), act: true },
    Case { path: MESSAGES, fixture: fixture!("anthropic/vercel_web_fetch_tool.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(4230, 446)), before_finish: Some("I'll fetch the content from that Wikipedia page to tell you what it's about.This Wikipedia page is about the **Maglemosian culture**, which was an early Mesolithic (Middle Stone Age) archaeological culture that existed in Northern Europe from approximately 9,000 to 6,000 BC.\n\nHere are the key points about what this page covers:\n\n**Geographic and Temporal Context:**\n- The culture spanned across Northern Europe, from England to Poland and from southern Sweden to northern France\n- It existed during a period when sea levels were much lower and Britain was connected to mainland Europe\n- The culture overlapped with the end of the last ice age\n\n**Origins and Discovery:**\n- Named after the Danish archaeological site Maglemose, located near Gørlev and Høng in western Zealand, Denmark\n- First excavated in 1900 by George Sarauw\n- Similar settlements were subsequently discovered across a wide area of Northern Europe\n\n**Lifestyle and Technology:**\n- The Maglemosian people lived in forest and wetland environments\n- They were primarily hunter-gatherers who used fishing and hunting tools\n- They had domesticated dogs\n- Most were nomadic, though some may have lived more settled lives\n- They built huts made of bark\n\n**Distinctive Tools and Artifacts:**\n- Used tools made from wood, bone, flint, and horn\n- Characteristic sharply-edged flint microliths for spear and arrow heads\n- Notable fishing spears called \"leisters\" used for gigging (spear fishing)\n\nThe page also discusses the archaeological significance of the culture and mentions that underwater archaeology may reveal more findings since much of their territory was later submerged by rising sea levels."), act: true },
    Case { path: MESSAGES, fixture: fixture!("anthropic/vercel_web_search_tool.sse"), reason: "end_turn", kind: FinishKind::Complete, usage: Some(Usage::new(15665, 795)), before_finish: Some("Based on my search results, here are the key tech news developments from today (September 26, 2025):\n\n## Apple News\nApple today announced the grand reopening of Apple Ginza on Friday, September 26, located in the vibrant Ginza district where Apple's retail journey in Japan began more than two decades ago. Apple Ginza opens to customers Friday, September 26, at 10 a.m. JST. Opened in 2003 as Apple's first store outside the U.S., Apple Ginza now returns in an all-new four-story design that brings together the best of Apple's products, services, and experiences in one beautifully reimagined space.\n\n## Recent Apple Product Updates\nApple is considering building a pilot production line for a foldable iPhone in Taiwan, with plans to launch the new foldable iPhone in 2026. Currently, multiple sources have confirmed that Apple plans to release its first foldable iPhone in 2026 as part of the iPhone 18 lineup.\n\nOpenAI launches ChatGPT Pulse, proactively writing your morning briefing. OpenAI is rolling out a new feature in ChatGPT called Pulse, which generates personalized reports while users sleep. Pulse provides users with a quick overview of their day with 5-10 briefings, designed to encourage them to check ChatGPT first thing in the morning.\n\n## Major Tech Industry Developments from Yesterday\n\nOn September 25, 2025, headlines were dominated by seismic shifts in AI infrastructure, potential blockbuster partnerships between legacy chip giants, and escalating regulatory battles that could redefine global innovation.\n\nKey highlights include:\n- Microsoft shook up its AI stack by integrating Anthropic's models into Copilot for Microsoft 365, reducing OpenAI dependency and boosting productivity tools like real-time analytics.\n- Oracle followed with a $15 billion bond raise for cloud expansion, riding AI demand waves.\n- Google launched Mixboard, an AI mood board app with Gemini-powered suggestions for designers, and rolled conversational editing to more Android phones in Photos.\n\n## Recent iOS Updates\nWith iOS 26 officially launched, Apple is moving forward with iOS 26.1. Apple released iOS 26 on September 15, bringing the Liquid Glass redesign to the iPhone.\n\nThe main tech story today appears to be Apple's significant retail milestone with the reopening of their redesigned flagship Ginza store in Tokyo, marking over 20 years since their first international retail expansion."), act: true },
    Case { path: GEMINI, fixture: fixture!("gemini/docs_code_execution.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(20, 60)), before_finish: Some("I will compute the sum with code."), act: true },
    Case { path: GEMINI, fixture: fixture!("gemini/docs_grounding.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(104, 16)), before_finish: Some("Spain won Euro 2024,"), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/docs_malformed_function_call.sse"), reason: "MALFORMED_FUNCTION_CALL", kind: FinishKind::Malformed, usage: Some(Usage::new(30, 10)), before_finish: Some("Let me call the tool."), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/docs_max_tokens_after_text.sse"), reason: "MAX_TOKENS", kind: FinishKind::Truncated, usage: Some(Usage::new(9, 4)), before_finish: Some("Once upon a time"), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/docs_max_tokens_thinking_only.sse"), reason: "MAX_TOKENS", kind: FinishKind::Truncated, usage: Some(Usage::new(8, 99)), before_finish: None, act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/docs_recitation_after_text.sse"), reason: "RECITATION", kind: FinishKind::Filtered, usage: Some(Usage::new(9, 4)), before_finish: Some("Once upon a time"), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/docs_safety_after_text.sse"), reason: "SAFETY", kind: FinishKind::Filtered, usage: Some(Usage::new(9, 4)), before_finish: Some("Once upon a time"), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/docs_thought_summary.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(12, 392)), before_finish: Some("The answer is a shadow."), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_issue_18073_empty_text_thought_signature.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(15, 53)), before_finish: Some("4"), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_issue_19822_search_live.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(325, 370)), before_finish: Some("The current date is Wednesday, August 26, 2026."), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_partial_args_array.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(54, 195)), before_finish: None, act: true },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_reasoning.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(9, 285)), before_finish: Some("There are **3** \"r\"s in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y."), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_reasoning_gemini3.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(9, 325)), before_finish: Some("There are **3** \"r\"s in strawberry.\n\nSt**r**awbe**rr**y"), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_stream_no_args_tool_call.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(249, 241)), before_finish: None, act: true },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_stream_tool_call_arguments.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(26, 155)), before_finish: None, act: true },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_text.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(9, 208)), before_finish: Some("There are **3** \"r\"s in strawberry.\n\nst**r**awbe**rr**y"), act: false },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_tool_call.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(29, 60)), before_finish: None, act: true },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_tool_call_gemini3.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(29, 819)), before_finish: None, act: true },
    Case { path: GEMINI, fixture: fixture!("gemini/vercel_vertex_stream_tool_call_arguments_nested.sse"), reason: "STOP", kind: FinishKind::Complete, usage: Some(Usage::new(31, 1710)), before_finish: None, act: true },
    Case { path: RESPONSES, fixture: fixture!("responses/docs_incomplete_content_filter.sse"), reason: "content_filter", kind: FinishKind::Filtered, usage: Some(Usage::new(37, 11)), before_finish: Some("Hi"), act: false },
    Case { path: RESPONSES, fixture: fixture!("responses/docs_incomplete_max_output_tokens.sse"), reason: "max_output_tokens", kind: FinishKind::Truncated, usage: Some(Usage::new(37, 11)), before_finish: Some("Hi there"), act: false },
    Case { path: RESPONSES, fixture: fixture!("responses/docs_incomplete_reasoning_only.sse"), reason: "max_output_tokens", kind: FinishKind::Truncated, usage: Some(Usage::new(37, 100)), before_finish: None, act: false },
    Case { path: RESPONSES, fixture: fixture!("responses/docs_reasoning_then_function_call.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(60, 90)), before_finish: None, act: true },
    Case { path: RESPONSES, fixture: fixture!("responses/docs_text.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(37, 11)), before_finish: Some("Hi there!"), act: false },
    Case { path: RESPONSES, fixture: fixture!("responses/vercel_code_interpreter_tool.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(6047, 1623)), before_finish: Some("Here’s a simulation of rolling two fair six-sided dice 10,000 times. Each trial sums the two dice.\n\nResults\n- Total sum of all 10,000 trials: 69,868\n- Average sum per trial: 6.9868\n- Minimum sum observed: 2\n- Maximum sum observed: 12\n- Sample of the first 20 trial sums: 6, 7, 2, 5, 5, 11, 4, 8, 10, 7, 5, 8, 8, 7, 10, 8, 9, 5, 4, 7\n\nFull data\n- You can download all 10,000 sums as a CSV file here: [Download the sums CSV](sandbox:/mnt/data/roll2dice_sums_10000.csv)\n\nIf you’d like, I can also provide a frequency distribution, histogram, or export the data in another format (JSON, Excel, etc.)."), act: true },
    Case { path: RESPONSES, fixture: fixture!("responses/vercel_custom_tool.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(50, 20)), before_finish: None, act: true },
    Case { path: RESPONSES, fixture: fixture!("responses/vercel_file_search_tool.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(3737, 621)), before_finish: Some("According to the document, an embedding model converts complex data (e.g., words or images) into a dense vector — a list of numbers — called an embedding . Unlike generative models, embedding models do not generate new text or data; instead they produce vector representations that capture semantic and syntactic relationships and can be used as input for other models or NLP tasks ."), act: true },
    Case { path: RESPONSES, fixture: fixture!("responses/vercel_github_copilot_id_rotation.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(19, 105)), before_finish: Some("There are **3** letter **“r”**s in **“strawberry.”**\n\nBreakdown: **s t r a w b e r r y**  \nYou can see **r** at positions **3, 8, and 9**."), act: false },
    Case { path: RESPONSES, fixture: fixture!("responses/vercel_image_generation_tool.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(2941, 1249)), before_finish: None, act: true },
    Case { path: RESPONSES, fixture: fixture!("responses/vercel_local_shell_tool.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(407, 151)), before_finish: None, act: true },
    Case { path: RESPONSES, fixture: fixture!("responses/vercel_mcp_tool.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(11791, 963)), before_finish: Some("Yes — I searched the web. Major outlets are projecting Zohran Mamdani as the winner of the 2025 New York City mayoral race.\n\nSummary (from multiple live-results pages and AP projections)\n- Projected winner: Zohran Mamdani (Democrat)\n- Main challengers: Andrew Cuomo (running independent), Curtis Sliwa (Republican)\n- Reported vote shares from live trackers as results came in: Mamdani ≈ 50–50.4%, Cuomo ≈ 41–42%, Sliwa ≈ 7–8% (percentages vary slightly by outlet/time reporting)\n\nSources / live result pages\n- NBC News (live results): https://www.nbcnews.com/politics/2025-elections/new-york-city-mayor-results\n- Washington Post (live updates / AP projection): https://www.washingtonpost.com/elections/results/2025/11/04/new-york-city-mayor-results/\n- CNN (race page / projection): https://www.cnn.com/election/2025/results/new-york-city-mayor\n- ABC News (projection article): https://abcnews.go.com/Politics/new-york-city-2025-mayoral-election-results-mamdani/story?id=126345335\n- NPR (coverage): https://www.npr.org/2025/11/04/nx-s1-5597788/election-results-zohran-mamdani-new-york-city-mayor\n\nWould you like me to:\n- Pull the official NYC Board of Elections final results page?\n- Send a link to a specific news outlet’s detailed breakdown (by borough/district)?"), act: true },
    Case { path: RESPONSES, fixture: fixture!("responses/vercel_phase.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(7112, 463)), before_finish: Some("Got itHere are a few **AI"), act: false },
    Case { path: RESPONSES, fixture: fixture!("responses/vercel_reasoning_encrypted_content.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(134, 28)), before_finish: None, act: true },
    Case { path: RESPONSES, fixture: fixture!("responses/vercel_web_search_tool.sse"), reason: "completed", kind: FinishKind::Complete, usage: Some(Usage::new(31073, 4416)), before_finish: Some("I checked today’s tech headlines (today = December 5, 2025) and opened a few news pages — then searched those pages for the keyword pattern \"vercel\" (case-insensitive). Summary:\n\nTop tech headlines I opened (brief):\n- Petco disclosed a customer-data exposure / security lapse. ([techcrunch.com](https://techcrunch.com/2025/12/05/petco-confirms-security-lapse-exposed-customers-personal-data/?utm_source=openai))  \n- The New York Times sued AI search/startup Perplexity for copyright infringement. ([techcrunch.com](https://techcrunch.com/2025/12/05/the-new-york-times-is-suing-perplexity-for-copyright-infringement/?utm_source=openai))  \n- Meta signed commercial AI data agreements with a set of publishers so Meta AI can surface real‑time news. ([techcrunch.com](https://techcrunch.com/2025/12/05/meta-signs-commercial-ai-data-agreements-with-publishers-to-offer-real-time-news-on-meta-ai/?utm_source=openai))  \n- Reports of a major media deal: Netflix to acquire Warner Bros (headline on TechCrunch today). ([techcrunch.com](https://techcrunch.com/2025/12/05/netflix-to-acquire-warner-bros-in-a-disruptive-deal-valued-at-82-7b/?utm_source=openai))  \n- WIRED published a recap of its “Big Interview” event (Dec 4). ([wired.com](https://www.wired.com/story/the-big-interview-2025-recap?utm_source=openai))\n\nPages I opened and searched for the pattern \"vercel\"\n- TechCrunch — Petco data-breach article (Dec 5, 2025). I opened and searched the page: no mention of \"vercel\". ([techcrunch.com](https://techcrunch.com/2025/12/05/petco-confirms-security-lapse-exposed-customers-personal-data/?utm_source=openai))  \n- TechCrunch — NYT vs Perplexity (Dec 5, 2025). I opened and searched the page: no mention of \"vercel\". ([techcrunch.com](https://techcrunch.com/2025/12/05/the-new-york-times-is-suing-perplexity-for-copyright-infringement/?utm_source=openai))  \n- TechCrunch — Meta commercial AI data agreements (Dec 5, 2025). I opened and searched the page: no mention of \"vercel\". ([techcrunch.com](https://techcrunch.com/2025/12/05/meta-signs-commercial-ai-data-agreements-with-publishers-to-offer-real-time-news-on-meta-ai/?utm_source=openai))  \n- TechCrunch — Netflix/Warner Bros coverage (Dec 5, 2025). I opened and searched the page: no mention of \"vercel\". ([techcrunch.com](https://techcrunch.com/2025/12/05/netflix-to-acquire-warner-bros-in-a-disruptive-deal-valued-at-82-7b/?utm_source=openai))  \n- WIRED — Big Interview recap (Dec 4, 2025). I opened and searched the page: no mention of \"vercel\". ([wired.com](https://www.wired.com/story/the-big-interview-2025-recap?utm_source=openai))  \n- TechStartups — daily roundup (Dec 5, 2025). I opened and searched the page: no mention of \"vercel\". ([techstartups.com](https://techstartups.com/2025/12/05/technology-news-today-the-latest-in-tech-ai-startup-news-december-5-2025/?utm_source=openai))\n\nSo: none of those specific “today” stories/pages contained the string \"vercel\".\n\nRelated note — there is recent Vercel news (not on the Dec 5 pages above): Vercel (the AI/web developer platform) closed a large funding round / Series F ($300M) at about a $9.3B valuation (reported Sept 30, 2025 / Oct 2025 by Reuters, Business Wire and others). If you want I can open those funding stories and extract details (investors, use of proceeds, v0 agent metrics, etc.). ([finance.yahoo.com](https://finance.yahoo.com/news/ai-coding-startup-vercel-raises-163055044.html?utm_source=openai))\n\nWould you like me to:\n- search more news sites today specifically for any new Vercel mentions (I can do a live search across more outlets), or  \n- open the Vercel funding/coverage pages and pull out more details now?"), act: true },
    ])
    .await;
}

/// openai-python's recorded `n=3` stream (`test_parse_pydantic_model_multiple_choices`):
/// whole, three choices each finished with `stop`.
#[tokio::test]
async fn openai_three_choices_whole() {
    let f = fixture!("openai/python_three_choices.sse");
    let d = delivered(run(CHAT, f).await);
    assert!(d.error.is_none(), "{:?}", d.error);
    let finish = d.report.finish.expect("a finish");
    assert_eq!(
        (finish.kind, &*finish.reason),
        (FinishKind::Complete, "stop")
    );
    assert_eq!(d.report.usage, Some(Usage::new(79, 42)));
}

/// The same stream cut before its first finish: OpenAI interleaves the
/// choices one per chunk. The client holds `choices[0].message.content`
/// (what the SDK's accumulated completion and a prefill resume read); the
/// guard appended every choice's delta into one string.
#[tokio::test]
async fn openai_three_choices_cut_delivers_the_first_choice_text() {
    let f = fixture!("openai/python_three_choices.sse");
    let cut = &f[..finish_at(CHAT, f)];
    let d = delivered(run(CHAT, cut).await);
    let error = d.error.expect("cut before its finish");
    assert_eq!(error.code(), Code::Truncated);
    let held = error.interrupted().and_then(|i| i.delivered_text.clone());
    assert_eq!(
        held.as_deref(),
        Some(r#"{"city":"San Francisco","temperature":65,"units":"f"}"#)
    );
    // The other choices' text is text, not a call in flight.
    let interrupted = error.interrupted().unwrap();
    assert_eq!(interrupted.tool_call_events, 0);
    assert!(interrupted.content_events > 0);
}

/// Recorded refusals (`delta.refusal`, with and without refusal
/// `logprobs`): the model declined; policy before anything is released.
#[tokio::test]
async fn openai_recorded_refusals_fail_as_policy() {
    for f in [
        fixture!("openai/python_refusal.sse"),
        fixture!("openai/python_refusal_logprobs.sse"),
    ] {
        let refused = failed(run(CHAT, f).await);
        assert_eq!(refused.code(), Code::Refused, "{refused:?}");
        assert_eq!(refused.action(), Action::Escalate);
        assert!(!refused.evidence().content_seen);
    }
}

/// Anthropic refusals before any text (`stop_reason: "refusal"` with
/// `stop_details`, the SDK's fixture and a recorded one).
#[tokio::test]
async fn anthropic_recorded_refusals_fail_as_policy() {
    for f in [
        fixture!("anthropic/sdk_refusal.sse"),
        fixture!("anthropic/vercel_refusal.sse"),
    ] {
        let refused = failed(run(MESSAGES, f).await);
        assert_eq!(refused.code(), Code::Refused, "{refused:?}");
        assert_eq!(refused.action(), Action::Escalate);
        assert_eq!(refused.provider_code(), Some("refusal"));
    }
}

/// A prompt Gemini blocked (`promptFeedback.blockReason`, no candidates).
#[tokio::test]
async fn gemini_recorded_prompt_block_is_filtered() {
    let f = fixture!("gemini/vercel_issue_19758_prompt_block.sse");
    let failure = failed(run(GEMINI, f).await);
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::ContentFiltered, Action::Escalate)
    );
    assert_eq!(failure.provider_code(), Some("PROHIBITED_CONTENT"));
}

/// Thinking is no content: the docs' thinking stream has one text delta;
/// Gemini's thought summary chunk is not content either.
#[tokio::test]
async fn thinking_is_not_content() {
    let d = delivered(run(MESSAGES, fixture!("anthropic/docs_thinking.sse")).await);
    assert_eq!(d.report.content_events, 1);
    let d = delivered(run(MESSAGES, fixture!("anthropic/docs_thinking_omitted.sse")).await);
    assert_eq!(d.report.content_events, 1);
    let d = delivered(run(MESSAGES, fixture!("anthropic/docs_redacted_thinking.sse")).await);
    assert_eq!(d.report.content_events, 1);
    let d = delivered(run(GEMINI, fixture!("gemini/docs_thought_summary.sse")).await);
    assert_eq!(d.report.content_events, 2);
    // The recorded OpenAI text stream: one content event per non-empty
    // `delta.content`, none for the role chunk, the finish or the usage.
    let f = fixture!("openai/python_parse_nothing.sse");
    let texts = events(f)
        .iter()
        .filter(|(_, data)| {
            serde_json::from_str::<serde_json::Value>(data).is_ok_and(|v| {
                v["choices"][0]["delta"]["content"]
                    .as_str()
                    .is_some_and(|t| !t.is_empty())
            })
        })
        .count() as u64;
    let d = delivered(run(CHAT, f).await);
    assert_eq!(d.report.content_events, texts);
}

/// The Responses API's `error` event before content, nested as OpenAI's
/// servers send it (recorded: `insufficient_quota`), then
/// `response.failed`: the account's quota, never retried.
#[tokio::test]
async fn responses_recorded_quota_error_before_content() {
    let failure = failed(run(RESPONSES, fixture!("responses/vercel_error.sse")).await);
    assert_eq!(failure.code(), Code::QuotaExhausted, "{failure:?}");
    assert_ne!(failure.action(), Action::Retry);
}

/// The reference's flat `error` event before content: a failure, never
/// an empty answer.
#[tokio::test]
async fn responses_documented_error_event_is_a_failure() {
    let failure = failed(run(RESPONSES, fixture!("responses/docs_error_event.sse")).await);
    assert_ne!(failure.code(), Code::EmptyResponse, "{failure:?}");
    assert_eq!(failure.provider_code(), Some("ERR_SOMETHING"));
}

/// `response.failed` after text: an interruption the provider caused.
#[tokio::test]
async fn responses_failed_after_content_is_an_interruption() {
    let d = delivered(
        run(
            RESPONSES,
            fixture!("responses/docs_failed_after_content.sse"),
        )
        .await,
    );
    let error = d.error.expect("failed");
    assert_eq!(error.code(), Code::StreamInterrupted);
    let interrupted = error.interrupted().expect("delivered");
    assert_eq!(interrupted.delivered_text.as_deref(), Some("Hi"));
    assert_eq!(interrupted.cause, Some(Code::ProviderUnavailable));
}

/// A refusal streamed as `response.refusal.delta`: policy, before content.
#[tokio::test]
async fn responses_refusal_fails_as_policy() {
    let refused = failed(run(RESPONSES, fixture!("responses/docs_refusal.sse")).await);
    assert_eq!(refused.code(), Code::Refused, "{refused:?}");
    assert_eq!(refused.action(), Action::Escalate);
}

/// A thinking model's `thoughtSignature` can pass 128 KiB in one line
/// (python-genai's `test_aiohttp_large_sse_line_with_thought_signature`,
/// 150 000 bytes): an ordinary event.
#[tokio::test]
async fn a_gemini_chunk_with_a_large_thought_signature_is_read() {
    let signature = "A".repeat(150_000);
    let body = format!(
        "data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": \"Hello\"}}],\"role\": \"model\"}},\"index\": 0}}]}}\r\n\r\n\
         data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": \"\",\"thoughtSignature\": \"{signature}\"}}],\"role\": \"model\"}},\"finishReason\": \"STOP\",\"index\": 0}}]}}\r\n\r\n"
    );
    let d = delivered(run(GEMINI, &body).await);
    assert!(d.error.is_none(), "{:?}", d.error);
    assert_eq!(d.report.finish.map(|f| f.kind), Some(FinishKind::Complete));
}
