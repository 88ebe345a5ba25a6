#!/usr/bin/env bash
# evalys 4.0.7 (Batsim's analysis library: the tests read a run's
# out_jobs CSV with evalys.jobset.JobSet.from_csv). Its dependencies
# (pandas, matplotlib, seaborn, procset) install from their current
# wheels. Installs as root; fails loudly otherwise.
set -euo pipefail
have() {
  python3 -c 'import evalys, evalys.jobset; assert evalys.__version__ == "4.0.7", evalys.__version__' 2>/dev/null
}
have && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "error: evalys 4.0.7 is missing and this is not root; install it with:" >&2
  echo "  pip install evalys==4.0.7" >&2
  exit 1
fi
python3 -m pip install --quiet --root-user-action=ignore evalys==4.0.7
if ! have; then
  echo "error: evalys 4.0.7 still cannot be imported after installing it" >&2
  exit 1
fi
