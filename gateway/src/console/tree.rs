//! The agent tree as rows: depth-first from the main agent, children in the order the service
//! answered (first activity), each with its depth; agents whose parent is unknown hang under
//! the root so none is lost.

/// One agent's place: index into the answer's agents, and depth (main = 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub index: usize,
    pub depth: usize,
}

/// `agents` as `(agent id, parent id)`; the main agent has no id.
pub fn order(agents: &[(Option<&str>, Option<&str>)]) -> Vec<Place> {
    let known = |id: &str| agents.iter().any(|(agent, _)| *agent == Some(id));
    // Roots: the main agent, then agents whose parent is not in the tree.
    let roots: Vec<usize> = (0..agents.len())
        .filter(|&index| match agents[index] {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(_), Some(parent)) => !known(parent),
        })
        .collect();
    let mut placed = vec![false; agents.len()];
    let mut out = Vec::with_capacity(agents.len());
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&index| (index, 0)).collect();
    // Parentless subagents belong to the main agent.
    let main = agents.iter().position(|(agent, _)| agent.is_none());
    while let Some((index, depth)) = stack.pop() {
        if placed[index] {
            continue;
        }
        placed[index] = true;
        out.push(Place { index, depth });
        let id = agents[index].0;
        let children = (0..agents.len()).rev().filter(|&child| {
            !placed[child]
                && match (id, agents[child]) {
                    (Some(id), (Some(_), Some(parent))) => parent == id,
                    (None, (Some(_), None)) => true,
                    _ => false,
                }
        });
        stack.extend(children.map(|child| (child, depth + 1)));
    }
    // Anything left (a cycle in bad data) is still shown, at the top level.
    let depth = usize::from(main.is_some());
    out.extend(
        placed
            .iter()
            .enumerate()
            .filter(|(_, placed)| !**placed)
            .map(|(index, _)| Place { index, depth }),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(agents: &[(Option<&str>, Option<&str>)]) -> Vec<(usize, usize)> {
        order(agents)
            .into_iter()
            .map(|place| (place.index, place.depth))
            .collect()
    }

    #[test]
    fn depth_first_from_the_main_agent() {
        // main, a (main's), b (a's), c (main's, parent left unset)
        let agents = [
            (None, None),
            (Some("a"), None),
            (Some("b"), Some("a")),
            (Some("c"), None),
        ];
        assert_eq!(places(&agents), [(0, 0), (1, 1), (2, 2), (3, 1)]);
    }

    #[test]
    fn orphans_and_cycles_are_still_shown() {
        let orphan = [(None, None), (Some("x"), Some("missing"))];
        assert_eq!(places(&orphan), [(0, 0), (1, 0)]);
        let cycle = [(None, None), (Some("p"), Some("q")), (Some("q"), Some("p"))];
        let shown = places(&cycle);
        assert_eq!(shown.len(), 3, "{shown:?}");
        assert!(places(&[]).is_empty());
    }
}
