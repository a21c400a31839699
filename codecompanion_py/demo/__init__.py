"""The scripted local provider: for the no-key demo, the tests and the benchmarks."""
