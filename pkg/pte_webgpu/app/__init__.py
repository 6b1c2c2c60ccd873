"""The application: the command line, the demo page's calls, run jobs, npz inputs, the
checks a run makes on the host, and the program described for people and tools."""
