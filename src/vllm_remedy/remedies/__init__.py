"""One module per runbook step: observed state + policy -> a Plan. No I/O."""
