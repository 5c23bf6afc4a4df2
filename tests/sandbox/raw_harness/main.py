"""A test-only stand-in for grader/harness: runs line 1's "python" code in this process.

It lets tests/sandbox drive the backend with raw jobs (stdin contract of FORMAT.md
section 2: one JSON line, one nonce line) without the real harness's instrumentation.
"""

import json
import sys

job = json.loads(sys.stdin.readline())
nonce = sys.stdin.readline().strip()
exec(compile(job["python"], "job.py", "exec"), {"__name__": "__main__", "NONCE": nonce})
