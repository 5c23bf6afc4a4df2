"""The runs one grading is made of, one module per kind (grader.engine plans and combines
them): base (what a run is and returns), reference (the reference's run and its checks),
learner (the learner's run and its failure messages), devices (the runs with and without
a GPU) and second (the run with other starting values and every gradient scaled)."""
