"""What a classifier's or a regression's table reports: `task.report`, the metrics a named task's benchmark publishes
(conf/task/glue_*.yaml: CoLA `[mcc]`, MRPC `[f1, accuracy]`, STS-B `[pearson, spearman]`, ...), checked against the
metrics the job computes; null (a task of your own) reports the metric training stopped on (trainer.stop_metric)
first, then accuracy and macro-F1, or Pearson and Spearman. The record keeps the list (`report`); the collector's
table shows the first on the best validation and on test, the others on test. Torch-free: the collector reads it."""

from frozen_sweep.config.schema import ConfigError
from frozen_sweep.config.task import TaskKind

# what a classifier computes on valid and test (frozen_sweep.evaluate.scores): f1 is the F1 of the positive class,
# label id 1 (GLUE's F1 for MRPC and QQP: `equivalent`, `duplicate`) when there are two labels, macro-F1 with more
LABEL_METRICS = ("accuracy", "f1", "macro_f1", "mcc")
NUMBER_METRICS = ("pearson", "spearman")  # a regression's (its loss, the mean squared error, is always tabled)
REPORTABLE = {TaskKind.classify: LABEL_METRICS, TaskKind.regression: NUMBER_METRICS}
# the record's metric_name (its test_metric) → what a task that names no report shows after its stop metric
DEFAULT_REPORT = {"accuracy": ("accuracy", "macro_f1"), "pearson": ("pearson", "spearman")}


def reported(report, metric_name: str, stop_metric: str | None) -> list[str]:
    """The metrics a table shows: `report` (task.report) when given, else the stop metric (unless the loss) and the
    kind's defaults; [] where the record's metric is no classifier's or regression's."""
    if report:
        return list(report)
    defaults = DEFAULT_REPORT.get(metric_name, ())
    first = [stop_metric] if defaults and stop_metric in (*LABEL_METRICS, *NUMBER_METRICS) else []
    return list(dict.fromkeys([*first, *defaults]))


def check_report(task_cfg) -> None:
    """ConfigError unless task.report is null or names metrics that task.kind computes."""
    report = task_cfg.report
    if report is None:
        return
    kind = TaskKind(task_cfg.kind)
    allowed = REPORTABLE.get(kind, ())
    wrong = [str(m) for m in report if m not in allowed]
    if wrong or not len(report):
        plural = "is" if len(wrong) == 1 else "are"
        what = f"{', '.join(wrong)} {plural} not computed for" if wrong else "names no metric of"
        raise ConfigError(
            f"task.report=[{','.join(map(str, report))}]: {what} task.kind={kind.value}; allowed: a list of "
            f"{', '.join(allowed)}, or null (trainer.stop_metric, then the kind's defaults)"
        )
