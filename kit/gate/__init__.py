"""The gate: its policy (gates.yaml, kit.gate.policy) and its verdict over a run (kit.gate.verdict)."""
