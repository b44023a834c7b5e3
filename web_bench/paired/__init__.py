"""Seed 001, the paired browser-backend benchmark (`farm web`): its task site, the run matrix, the policies, the
runner, the results lines, the report and the lane's section of the run report. See web_bench/README.md."""
