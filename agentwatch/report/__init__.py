"""The offline report of `agentwatch score`: built from scores (`build`; the estimates of one set of conversations
in `group_stats`, failure modes in `failure_modes`), as JSON models (`model`), text (`text`) and HTML (`html`),
with pass@k / pass^k over units (`pass_k`), a section per version (`versions`) and the comparison with a baseline
(`baseline`). The live estimator is elsewhere (`agentwatch.exporters.estimator`).
"""
