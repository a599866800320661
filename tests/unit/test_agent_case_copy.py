import textwrap


def test_a_users_agent_gets_its_own_mutable_copy_of_the_context(tmp_path, monkeypatch):
    (tmp_path / "grow_agent.py").write_text(
        textwrap.dedent("""
        SEEN = []
        def run(text, case):
            case.context.setdefault("history", []).append(text)
            SEEN.append(len(case.context["history"]))
            return {"case_id": case.id, "final_output": "ok", "finish_reason": "finish", "spans": []}
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from kit.case import parse_case
    from kit.runner import invoke
    from kit.runner.agents import load_agent

    case = parse_case(
        {"id": "c", "input": "hi", "context": {"customer_id": "C001"}, "checks": [{"type": "finished"}]},
        file=None,
        base_dir=None,
        invariants={},
    )
    agent = load_agent("grow_agent:run")
    runs = [invoke(agent, case, i, timeout=5) for i in range(3)]
    assert [r.case_run.outcome for r in runs] == ["pass"] * 3
    import grow_agent

    assert grow_agent.SEEN == [1, 1, 1]
    assert "history" not in case.context
