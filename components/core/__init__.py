"""What every family builds on: numbers, quantities, durations, labels, the cloud, how Args models report an error, outputs, Kubernetes names and helpers, and what an add-on takes as its cluster."""
