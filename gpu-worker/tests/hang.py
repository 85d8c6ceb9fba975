"""The one bound the tests put on a child process or a wait: long enough that no machine, however slow or
loaded, reaches it while the work still progresses (a 2-rank learner step took minutes at load 25 on 2 cores),
so it only ever turns a real hang into a failure. No test bounds work by how fast the machine is."""

HANG_S = 3600.0
