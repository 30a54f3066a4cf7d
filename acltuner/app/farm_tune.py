"""Tuning on a farm: the tasks side by side, one thread each on the
workstation, every batch of measurements sent to the member the task is kept
on.  Each task's search is the single-board one; its records are appended
here, on the workstation, as each batch comes back, so the records file stays
the one source of truth and a killed tune resumes from it as ever."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from acltuner.farm.dispatch import Farm, FarmRunner
from acltuner.tuner.tune import TaskReport, TaskTuner, tune_unit


def farm_tuning(farm: Farm):
    """A tune_tasks for tune_model that tunes on `farm`."""
    def tune_tasks(tuner: TaskTuner, todo: list) -> list[TaskReport]:
        # The parts of one task (its pinned nodes and the rest) measure its
        # default both: one after the other, so it is recorded once.
        groups: dict[str, list[int]] = {}
        for i, (task, _) in enumerate(todo):
            groups.setdefault(task.key, []).append(i)

        def tune_group(indices: list[int]) -> dict[int, TaskReport]:
            reports = {}
            for i in indices:
                task, pin = todo[i]
                runner = FarmRunner(farm, tuner.runner.options)
                try:
                    reports[i] = tune_unit(tuner, task, pin,
                                           f"task {i + 1}/{len(todo)} {task.key}", runner)
                finally:
                    runner.release()
            return reports

        # A task per member, each kept on the member that holds it (Farm.call):
        # more would share members, and a member switching tasks computes the
        # task's reference output again (~0.1 s, as long as a measurement).
        in_flight = max(1, min(len(groups), len(farm.members())))
        with ThreadPoolExecutor(max_workers=in_flight,
                                thread_name_prefix="acltuner-farm-task") as pool:
            futures = {key: pool.submit(tune_group, indices) for key, indices in groups.items()}
            try:
                reports: list[TaskReport] = []
                for task, _ in todo:  # reported in order
                    reports.append(futures[task.key].result()[len(reports)])
                    tuner.reporter.task_done(reports[-1])
            except BaseException:
                farm.stop()
                for future in futures.values():
                    future.cancel()
                raise
        return reports
    return tune_tasks
