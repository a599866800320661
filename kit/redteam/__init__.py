"""The red team's parts that the kit itself needs (`kit init` writes the root config's adaptive red team) and the
Promptfoo adapter builds on: attack goals from the invariants (kit.redteam.goals)."""
