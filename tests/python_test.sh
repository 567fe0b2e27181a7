#!/usr/bin/env bash
# The Python package's tests (python/tests) under pytest, against this build: PACKAGE_PATH (the
# build tree's python/, whose rooflab/ holds the module just built beside links to
# python/src/rooflab) comes first on PYTHONPATH, and the run fails if Python still imports
# rooflab._rooflab from elsewhere (an installed or editable rooflab). The import, the signatures
# and the argument errors run everywhere; without a GPU or a framework, the GPU tests skip, and
# the summary says why, one line a reason (conftest.py). Skipped (exit 77) where PYTHON has no
# pytest or NumPy. Bytecode goes under WORK, not into the source tree; pytest keeps no cache.
#   tests/python_test.sh PYTHON PACKAGE_PATH TESTS_DIR WORK
set -u
python=$1 package_path=$2 tests_dir=$3 work=$4
for module in pytest numpy; do
  "$python" -c "import $module" 2>/dev/null || { echo "$python has no $module: skipped"; exit 77; }
done
mkdir -p "$work"
export PYTHONPATH="$package_path${PYTHONPATH:+:$PYTHONPATH}" PYTHONPYCACHEPREFIX="$work/pycache"

if ! native=$("$python" -c "import rooflab._rooflab as native; print(native.__file__)" 2>&1); then
  echo "FAIL: import rooflab failed with PYTHONPATH=$PYTHONPATH:"
  echo "$native"
  exit 1
fi
if [[ "$native" != "$package_path/rooflab/"* ]]; then
  echo "FAIL: Python imports rooflab._rooflab from $native, not this build's $package_path/rooflab:"
  echo "another rooflab comes first on sys.path (an installed or editable one: pip uninstall rooflab)"
  exit 1
fi
echo "rooflab._rooflab: $native"
exec "$python" -m pytest "$tests_dir" -q -p no:cacheprovider
