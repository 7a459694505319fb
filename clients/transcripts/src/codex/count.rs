//! Codex's cumulative usage figures and the usage between two of them.
//!
//! A `token_count` event states `info.total_token_usage`, the process's running total. Across
//! more than 1,300 real events the growth of that total equals the event's
//! `info.last_token_usage` exactly (HOOKS.md 4.9), so the usage an event adds is the difference
//! from the previous total, exact even when an event between was lost:
//!
//! | previous → current | meaning | usage |
//! |---|---|---|
//! | none → T | the first count of the file | T, taken whole |
//! | T → T | a repeat (from 0.44 most events are written twice) | nothing |
//! | T → U, U ≥ T in total and input | growth | U − T |
//! | T → U, U < T in total or input | another process appended to the file and started its own count | U, taken whole |
//! | T → U, U ≥ T, but U − T ≠ the event's `last_token_usage` and U = it | a new process whose first answer outgrew the old total in every kind (four `codex exec` runs in one 0.65 rollout) | U, taken whole |
//!
//! OpenAI counts cached input inside `input_tokens` and reasoning inside `output_tokens`.

use crate::facts::CodexTotal;
use crate::record::Tokens;

/// The usage between two cumulative totals, given the event's own `last_token_usage` when it
/// states one; `None` when nothing moved (a repeat).
pub fn delta(
    previous: Option<CodexTotal>,
    current: CodexTotal,
    last: Option<CodexTotal>,
) -> Option<CodexTotal> {
    let Some(previous) = previous else {
        return Some(current);
    };
    if previous == current {
        return None;
    }
    let shrank = current.total < previous.total
        || current.input < previous.input
        || current.cached_input < previous.cached_input
        || current.cache_write < previous.cache_write
        || current.output < previous.output
        || current.reasoning < previous.reasoning;
    if shrank {
        return Some(current);
    }
    let growth = CodexTotal {
        input: current.input - previous.input,
        cached_input: current.cached_input - previous.cached_input,
        cache_write: current.cache_write - previous.cache_write,
        output: current.output - previous.output,
        reasoning: current.reasoning - previous.reasoning,
        total: current.total - previous.total,
    };
    match last {
        Some(last) if growth != last && current == last => Some(current),
        _ => Some(growth),
    }
}

/// An OpenAI usage figure as the five kinds: uncached input is `input − cached − cache
/// write`; reasoning stays inside output and is also kept on its own.
pub fn tokens(usage: CodexTotal) -> Tokens {
    Tokens {
        input: usage
            .input
            .saturating_sub(usage.cached_input)
            .saturating_sub(usage.cache_write),
        output: usage.output,
        cache_read: usage.cached_input,
        cache_write_5m: usage.cache_write,
        cache_write_1h: 0,
        reasoning: usage.reasoning.min(usage.output),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(input: u64, cached: u64, output: u64, reasoning: u64) -> CodexTotal {
        CodexTotal {
            input,
            cached_input: cached,
            cache_write: 0,
            output,
            reasoning,
            total: input + output,
        }
    }

    #[test]
    fn deltas() {
        type Case = (
            Option<CodexTotal>,
            CodexTotal,
            Option<CodexTotal>,
            Option<CodexTotal>,
        );
        let cases: &[Case] = &[
            // The first count of a file is taken whole.
            (None, total(10, 2, 3, 1), None, Some(total(10, 2, 3, 1))),
            // A repeat is nothing.
            (Some(total(10, 2, 3, 1)), total(10, 2, 3, 1), None, None),
            // Growth is the difference, kind by kind.
            (
                Some(total(10, 2, 3, 1)),
                total(25, 12, 5, 2),
                None,
                Some(total(15, 10, 2, 1)),
            ),
            // ... also when the event states it as its last answer.
            (
                Some(total(10, 2, 3, 1)),
                total(25, 12, 5, 2),
                Some(total(15, 10, 2, 1)),
                Some(total(15, 10, 2, 1)),
            ),
            // A total that went down starts a new count, taken whole.
            (
                Some(total(100, 0, 9, 0)),
                total(7, 0, 1, 0),
                None,
                Some(total(7, 0, 1, 0)),
            ),
            // So does any kind going down while the total grows.
            (
                Some(total(100, 0, 9, 0)),
                total(90, 0, 200, 0),
                None,
                Some(total(90, 0, 200, 0)),
            ),
            (
                Some(total(100, 50, 9, 0)),
                total(120, 10, 20, 0),
                None,
                Some(total(120, 10, 20, 0)),
            ),
            // A new process whose first answer is bigger in every kind: the event's total is
            // its own last answer, and not the growth.
            (
                Some(total(10_206, 1_024, 9, 0)),
                total(10_224, 10_112, 14, 0),
                Some(total(10_224, 10_112, 14, 0)),
                Some(total(10_224, 10_112, 14, 0)),
            ),
        ];
        for (previous, current, last, expected) in cases {
            assert_eq!(
                delta(*previous, *current, *last),
                *expected,
                "{previous:?} → {current:?} (last {last:?})"
            );
        }
    }

    #[test]
    fn kinds() {
        let five = tokens(CodexTotal {
            input: 100,
            cached_input: 60,
            cache_write: 10,
            output: 5,
            reasoning: 3,
            total: 105,
        });
        assert_eq!(
            (
                five.input,
                five.cache_read,
                five.cache_write_5m,
                five.output,
                five.reasoning
            ),
            (30, 60, 10, 5, 3)
        );
        assert_eq!(five.total(), 105, "reasoning is inside output, not added");
    }
}
