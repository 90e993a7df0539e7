"""Jobs as a test reads them once a daemon ran them: the daemon's sweep moves the jobs that ended
to ``job_history`` seconds later, so a query reads the queue and its history together."""

ALL_JOBS = "(SELECT * FROM jobs UNION ALL SELECT * FROM job_history)"
"""Every job, wherever it is (alias it: ``FROM {ALL_JOBS} AS j``)."""
