//! The session page's agent tree: each agent with its status and its own and rolled-up cost,
//! and the session's figures with the delegation savings estimate.

use baton_proto::usage::v1 as usage;

use crate::console::tree;
use crate::console::view;

pub struct AgentRow {
    pub indent: String,
    pub depth: usize,
    pub name: String,
    pub model: String,
    pub status: String,
    pub own_cost: String,
    pub own_cost_usd: String,
    pub cost: String,
    pub cost_usd: String,
    pub tokens: String,
    pub unpriced: String,
}

pub struct Figures {
    pub cost: String,
    pub cost_usd: String,
    pub tokens: String,
    pub unpriced: String,
    pub savings: String,
    pub savings_note: String,
}

fn figures_text(figures: Option<&usage::Figures>) -> view::FigureText {
    view::figure_text(&figures.cloned().unwrap_or_default())
}

pub(crate) fn agent_rows(answer: &usage::GetTreeResponse) -> Vec<AgentRow> {
    let shape: Vec<(Option<&str>, Option<&str>)> = answer
        .agents
        .iter()
        .map(|agent| (agent.agent_id.as_deref(), agent.parent_agent_id.as_deref()))
        .collect();
    tree::order(&shape)
        .into_iter()
        .map(|place| {
            let agent = &answer.agents[place.index];
            let name = match (&agent.agent_id, &agent.subagent_type) {
                (None, _) => "main agent".to_string(),
                (Some(id), Some(kind)) => format!("{kind} ({id})"),
                (Some(id), None) => format!("{} ({id})", agent.kind),
            };
            let own = figures_text(agent.own.as_ref());
            let view::FigureText {
                cost,
                cost_usd,
                tokens,
                unpriced,
            } = figures_text(agent.rolled_up.as_ref());
            AgentRow {
                indent: if place.depth == 0 {
                    String::new()
                } else {
                    format!("{}└ ", "  ".repeat(place.depth - 1))
                },
                depth: place.depth.min(6),
                name,
                model: agent.model.clone().unwrap_or_else(|| "—".to_string()),
                status: agent.status.clone(),
                own_cost: own.cost,
                own_cost_usd: own.cost_usd,
                cost,
                cost_usd,
                tokens,
                unpriced,
            }
        })
        .collect()
}

pub(crate) fn session_figures(answer: &usage::GetTreeResponse) -> Figures {
    let summary = answer
        .session
        .as_ref()
        .and_then(|session| session.figures.as_ref());
    let view::FigureText {
        cost,
        cost_usd,
        tokens,
        unpriced,
    } = figures_text(summary);
    let savings = answer.delegation_savings.clone().unwrap_or_default();
    let mut note = match &savings.counterfactual_model {
        Some(model) => format!("had every agent run on {model}"),
        None => "no counterfactual model: the main agent's model is unknown".to_string(),
    };
    if !savings.skipped_agent_ids.is_empty() {
        note.push_str(&format!(
            "; {} agent(s) left out (no price for their model)",
            savings.skipped_agent_ids.len()
        ));
    }
    Figures {
        cost,
        cost_usd,
        tokens,
        unpriced,
        savings: view::usd(savings.savings_usd),
        savings_note: note,
    }
}
