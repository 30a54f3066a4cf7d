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

def farm_tuning(farm: Farm):
    """A tune_tasks for tune_model that tunes on `farm`."""
    def tune_tasks(tuner: TaskTuner, tasks: list[Task]) -> list[TaskReport]:
        # A task per member, each kept on the member that holds it (Farm.call):
        # more would share members, and a member switching tasks computes the
        # task's reference output again (~0.1 s, as long as a measurement).
        in_flight = max(1, min(len(tasks), len(farm.members())))

        def tune_one(task: Task, label: str) -> TaskReport:
            runner = FarmRunner(farm, tuner.runner.options)
            try:
                return tuner.tune(task, label, runner)
            finally:
                runner.release()

        with ThreadPoolExecutor(max_workers=in_flight,
                                thread_name_prefix="acltuner-farm-task") as pool:
            futures = [pool.submit(tune_one, task, f"task {i}/{len(tasks)} {task.key}")
                       for i, task in enumerate(tasks, 1)]
            try:
                reports = []
                for future in futures:  # reported in task order
                    reports.append(future.result())
                    tuner.reporter.task_done(reports[-1])
            except BaseException:
                farm.stop()
                for future in futures:
                    future.cancel()
                raise
        return reports
    return tune_tasks
