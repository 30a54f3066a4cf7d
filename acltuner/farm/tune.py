"""Tuning on a farm: the tasks side by side, one thread each on the
workstation, every batch of measurements sent to whichever member is free.
Each task's search is the single-board one; its records are appended here, on
the workstation, as each batch comes back, so the records file stays the one
source of truth and a killed tune resumes from it as ever."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from acltuner.farm.dispatch import Farm, FarmRunner
from acltuner.taskgen.tasks import Task
from acltuner.tuner.tune import TaskReport, TaskTuner

# Tasks in flight beyond one per member: a batch waits queued while another
# task's cost model is refitted, so no member idles through the refit.
EXTRA_TASKS = 1


def farm_tuning(farm: Farm):
    """A tune_tasks for tune_model that tunes on `farm`."""
    def tune_tasks(tuner: TaskTuner, tasks: list[Task]) -> list[TaskReport]:
        in_flight = max(1, min(len(tasks), len(farm.members()) + EXTRA_TASKS))
        with ThreadPoolExecutor(max_workers=in_flight,
                                thread_name_prefix="acltuner-farm-task") as pool:
            futures = [pool.submit(tuner.tune, task, f"task {i}/{len(tasks)} {task.key}",
                                   FarmRunner(farm, tuner.runner.options))
                       for i, task in enumerate(tasks, 1)]
            try:
                reports = []
                for future in futures:  # reported in task order
                    reports.append(future.result())
                    tuner.reporter.task_done(reports[-1])
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
        return reports
    return tune_tasks
