"""Game-day rehearsals: scenarios, runner, report."""
