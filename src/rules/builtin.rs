//! Flow's built-in rules, one per operation, kept as data in `builtin.yaml` and read through the
//! same parser and checks as rules sent to the API.

use std::sync::OnceLock;

use super::model::Rule;
use super::parse;
use crate::domain::code::OperationCode;

const SOURCE: &str = include_str!("builtin.yaml");

fn load() -> Vec<Rule> {
    let doc: serde_json::Value =
        serde_yaml::from_str(SOURCE).unwrap_or_else(|e| panic!("builtin.yaml is not YAML: {e}"));
    let rules = doc
        .get("rules")
        .and_then(|r| r.as_array())
        .unwrap_or_else(|| panic!("builtin.yaml has no rules list"));
    rules
        .iter()
        .map(|value| {
            let input = parse::rule(value)
                .unwrap_or_else(|e| panic!("a built-in rule in builtin.yaml is invalid: {e}"));
            Rule {
                id: None,
                name: input.name,
                description: input.description,
                operation: input.operation,
                is_default: false,
                builtin: true,
                version: None,
                definition: input.definition,
                created_at: None,
                updated_at: None,
            }
        })
        .collect()
}

/// Every built-in rule, in the order of `builtin.yaml`.
pub fn all() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(load)
}

/// The built-in rule for an operation code (a downgrade's and a rollback's is `upgrade`'s).
pub fn for_operation(operation: OperationCode) -> Option<&'static Rule> {
    let operation = operation.rule_code();
    all().iter().find(|r| r.operation == operation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_exactly_one_valid_built_in_rule() {
        let own: Vec<_> = OperationCode::ALL
            .into_iter()
            .filter(|c| c.rule_code() == *c)
            .collect();
        for code in &own {
            let matching = all().iter().filter(|r| r.operation == *code).count();
            assert_eq!(matching, 1, "{code}");
        }
        assert_eq!(all().len(), own.len());
        assert_eq!(
            for_operation(OperationCode::Rollback).map(|r| r.operation),
            Some(OperationCode::Upgrade)
        );
    }

    #[test]
    fn firmware_upgrade_includes_power_shelves_one_at_a_time() {
        let rule = for_operation(OperationCode::Upgrade).unwrap();
        let shelves = rule
            .definition
            .stages
            .iter()
            .find(|s| s.component_types == [crate::domain::ComponentType::PowerShelf])
            .unwrap();
        assert_eq!(shelves.max_parallel, 1);
    }
}
