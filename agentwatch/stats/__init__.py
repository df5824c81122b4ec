"""Estimators and intervals, pure functions over counts (needs the `service` extra: numpy, scipy).

- `pass_k`: pass@k and pass^k of one task from n trials (unbiased and plug-in), the mean over tasks;
- `beta`: Beta posteriors, their credible intervals and posterior means of p^k, regression probability;
- `bootstrap`: percentile-bootstrap intervals of a mean, seeded;
- `units`, `units_grid`: pass^k over units that differ (τ-bench's estimator) and its hierarchical posterior;
- `inclusion`, `ppi`, `corrected`: inclusion probabilities, PPI++, estimates corrected by people's labels;
- `agreement`: confusion, Cohen's κ and its interval;
- `cusum`: the Bernoulli CUSUM behind every quality alert, with exact run lengths.

No I/O, no clocks they do not receive, no global random state.
"""

from agentwatch.service_extra import require

require(__name__)  # fails with the extra to install, before numpy or scipy is imported
