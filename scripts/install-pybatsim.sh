#!/usr/bin/env bash
# pybatsim 3.2.1 (the Batsim schedulers the batsim tests run unchanged).
# Its metadata pins pyzmq < 23, which has no wheel for current Pythons, so
# it is installed without dependencies and then its dependencies at
# current versions (what the Batsim tests check works). Installs as root;
# fails loudly otherwise.
set -euo pipefail
have() {
  command -v pybatsim >/dev/null &&
    python3 -c 'import batsim, zmq, procset, sortedcontainers, docopt; assert batsim.__version__ == "3.2.1", batsim.__version__' 2>/dev/null
}
have && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "error: pybatsim 3.2.1 is missing and this is not root; install it with:" >&2
  echo "  pip install --no-deps pybatsim==3.2.1 && pip install pyzmq procset sortedcontainers docopt" >&2
  exit 1
fi
python3 -m pip install --quiet --root-user-action=ignore --no-deps pybatsim==3.2.1
python3 -m pip install --quiet --root-user-action=ignore pyzmq procset sortedcontainers docopt
if ! have; then
  echo "error: pybatsim 3.2.1 still cannot be imported after installing it" >&2
  exit 1
fi
