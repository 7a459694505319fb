//! Budgets: USD limits per calendar month or day for a tenant, a project or a member, with
//! thresholds that raise `usage.budget.crossed` once each per period ([`check`]), kept and
//! listed with their period's spend and forecast ([`service`]).

pub mod check;
pub mod rules;
pub mod service;
pub mod store;
