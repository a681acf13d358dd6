#!/usr/bin/env bash
# install_toolchains.sh - install the CUDA toolchains gpusim uses to compile kernels to SASS.
# Idempotent (reruns skip what is installed, then re-verify); run as root on Debian bookworm.
#
#  CUDA 11.8 (sm_35 Kepler, sm_52 Maxwell) -> $GPUSIM_CUDA11_HOME (default /opt/gpusim-cuda11.8)
#    Extracted with `apt-get download` + `dpkg -x` from Debian non-free (nvidia-cuda-toolkit; include/
#    from nvidia-cuda-dev, libcu++-dev, libcub-dev, libthrust-dev), not apt-installed (saves ~3 GB).
#    bin/nvcc is a wrapper adding: -ccbin <g++> -allow-unsupported-compiler -Wno-deprecated-gpu-targets
#    (11.8 officially stops at gcc 11; gcc 12 works). The real driver is bin/nvcc.bin, configured by
#    bin/nvcc.profile so it uses only this prefix's cicc/ptxas/headers. Usage:
#      $GPUSIM_CUDA11_HOME/bin/nvcc -arch=sm_52 -cubin -o k.cubin k.cu
#      $GPUSIM_CUDA11_HOME/bin/nvdisasm -hex -novliw k.cubin   (cuobjdump -sass / -res-usage / -elf too)
#  CUDA 13.0 (sm_90): nvcc+ptxas 13.0 from the base image (/usr/local/bin/nvcc, or $GPUSIM_NVCC13);
#    nvdisasm+cuobjdump from PyPI (no 13.0.x wheels exist; 13.2 is the oldest) pip-installed with
#    --target into $GPUSIM_CUDA13_HOME (default /opt/gpusim-cuda13), linked into its bin/.
#  Where things are recorded:
#    $PREFIX/env.sh   (both prefixes) sourceable, exports GPUSIM_NVCC11/GPUSIM_NVDISASM11/... paths
#    $PREFIX/VERSIONS the exact Debian / PyPI package versions used
#    ${XDG_CACHE_HOME:-~/.cache}/gpusim/toolchains.json  all tool paths + versions, for the Python code
set -euo pipefail
die() { echo "install_toolchains: ERROR: $*" >&2; exit 1; }
log() { echo "install_toolchains: $*"; }
trap 'die "command failed (line $LINENO): ${BASH_COMMAND%%$'"'\\n'"'*}"' ERR

P11=${GPUSIM_CUDA11_HOME:-/opt/gpusim-cuda11.8}
P13=${GPUSIM_CUDA13_HOME:-/opt/gpusim-cuda13}
PIP13_VER=${GPUSIM_CUDA13_TOOLS_VERSION:-13.2.86}   # nvidia-cuda-nvdisasm / -cuobjdump on PyPI
JSON=${GPUSIM_TOOLCHAINS_JSON:-${XDG_CACHE_HOME:-$HOME/.cache}/gpusim/toolchains.json}
STAMP=.gpusim-toolchain
[ "$(id -u)" = 0 ] || die "must run as root (apt-get / writing $P11)"

# ---- host C++ compiler (nvcc needs one even for -cubin: it preprocesses with it) ----
CXX=""; for c in g++-12 g++-11 g++; do command -v "$c" >/dev/null && { CXX=$(command -v "$c"); break; }; done
if [ -z "$CXX" ]; then
  log "no g++ found; apt-get install g++"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends g++ >/dev/null
  CXX=$(command -v g++) || die "g++ still missing after apt-get install g++"
fi

# ---- CUDA 11.8 from Debian ----
if [ -f "$P11/$STAMP" ] && "$P11/bin/nvcc.bin" --version 2>/dev/null | grep -q 'release 11.8'; then
  log "CUDA 11.8 already in $P11, skipping install"
else
  [ -e "$P11" ] && [ ! -f "$P11/$STAMP" ] && [ -n "$(ls -A "$P11")" ] && die "$P11 exists but was not made by this script; remove it"
  if ! grep -rqsE '^(Components:|deb ).*non-free( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; then
    URI=$(awk '/^URIs:/ && $2 ~ /debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    printf 'Types: deb\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: contrib non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "${URI:-http://deb.debian.org/debian}" > /etc/apt/sources.list.d/gpusim-nonfree.sources
    log "added /etc/apt/sources.list.d/gpusim-nonfree.sources (bookworm contrib non-free)"
  fi
  apt-get update -qq || die "apt-get update failed"
  WORK=$(mktemp -d /tmp/gpusim-cuda11.XXXXXX); STAGE="$P11.partial.$$"
  trap 'rm -rf "$WORK" "$STAGE"' EXIT
  PKGS="nvidia-cuda-toolkit nvidia-cuda-dev libcu++-dev libcub-dev libthrust-dev"
  log "downloading $PKGS (~860 MB, nvidia-cuda-dev is only mined for include/)"
  (cd "$WORK" && apt-get download -q $PKGS >/dev/null 2>"$WORK/dl.err") \
    || die "apt-get download failed: $(grep -m1 -E '^(E|W):' "$WORK/dl.err" || true)"
  mkdir -p "$STAGE"/{bin/crt,nvvm/bin,nvvm/libdevice,include}
  dpkg -x "$WORK"/nvidia-cuda-toolkit_*.deb "$WORK/tk"
  T=$WORK/tk/usr; L=$T/lib/nvidia-cuda-toolkit
  # usr/bin/nvcc in the deb is a shell stub; the real driver lives in lib/nvidia-cuda-toolkit/bin.
  cp "$L/bin/nvcc" "$STAGE/bin/nvcc.bin"
  for b in cudafe++ ptxas nvdisasm cuobjdump fatbinary nvlink bin2c cu++filt nvprune; do cp "$T/bin/$b" "$STAGE/bin/"; done
  cp "$L"/bin/crt/*.stub "$STAGE/bin/crt/"
  cp "$L/bin/cicc" "$STAGE/nvvm/bin/"; cp "$L"/libdevice/*.bc "$STAGE/nvvm/libdevice/"
  log "extracting include/ from nvidia-cuda-dev (decompresses ~2.8 GB; ~30-90 s)"
  for d in "$WORK"/nvidia-cuda-dev_*.deb "$WORK"/libcu++-dev_*.deb "$WORK"/libcub-dev_*.deb "$WORK"/libthrust-dev_*.deb; do
    dpkg-deb --fsys-tarfile "$d" | tar -x -C "$STAGE/include" --strip-components=3 --wildcards './usr/include/*'
  done
  rm -rf "$STAGE/include/cuda-gdb"
  # Debian's profile points at /usr/lib/...; use a self-contained one (layout of NVIDIA's own toolkit).
  cat > "$STAGE/bin/nvcc.profile" <<'EOF'
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64"
EOF
  for d in "$WORK"/*.deb; do dpkg-deb --show --showformat='${Package}=${Version}\n' "$d"; done > "$STAGE/VERSIONS"
  for b in "$STAGE"/bin/* "$STAGE"/nvvm/bin/cicc; do
    [ -f "$b" ] && [ -x "$b" ] && ldd "$b" 2>/dev/null | grep -q 'not found' && die "$b: missing shared library: $(ldd "$b" | grep 'not found')"
  done
  echo "cuda 11.8 for gpusim" > "$STAGE/$STAMP"
  rm -rf "$P11" && mv "$STAGE" "$P11"
  rm -rf "$WORK"; trap - EXIT
  log "installed CUDA 11.8 tools into $P11"
fi
# wrapper + env are rewritten on every run (cheap; picks up a changed host compiler)
cat > "$P11/bin/nvcc" <<EOF
#!/bin/sh
# gpusim wrapper: CUDA 11.8 nvcc with gcc>11 and sm_35 allowed. A -ccbin given by the caller wins.
exec "\$(dirname "\$(readlink -f "\$0")")/nvcc.bin" -ccbin "\${GPUSIM_CUDA11_CCBIN:-$CXX}" -allow-unsupported-compiler -Wno-deprecated-gpu-targets "\$@"
EOF
chmod 755 "$P11/bin/nvcc"
printf 'export GPUSIM_CUDA11_HOME=%s\nexport GPUSIM_NVCC11=%s/bin/nvcc\nexport GPUSIM_NVDISASM11=%s/bin/nvdisasm\nexport GPUSIM_CUOBJDUMP11=%s/bin/cuobjdump\n' \
  "$P11" "$P11" "$P11" "$P11" > "$P11/env.sh"

# ---- CUDA 13.0: nvcc from base image, nvdisasm/cuobjdump from PyPI ----
NVCC13=${GPUSIM_NVCC13:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ "$NVCC13" = "$P11/bin/nvcc" ] && NVCC13=/usr/local/cuda/bin/nvcc
"$NVCC13" --version 2>/dev/null | grep -q 'release 13\.' \
  || die "CUDA 13 nvcc not found (tried $NVCC13); it is expected in the base image at /usr/local/bin/nvcc (set GPUSIM_NVCC13)"
PTXAS13=$(dirname "$NVCC13")/ptxas; [ -x "$PTXAS13" ] || PTXAS13=$(command -v ptxas || echo "")
if [ -x "$P13/bin/nvdisasm" ] && grep -qx "nvidia-cuda-nvdisasm=$PIP13_VER" "$P13/VERSIONS" 2>/dev/null; then
  log "nvdisasm/cuobjdump $PIP13_VER already in $P13, skipping install"
else
  log "pip install nvidia-cuda-nvdisasm/cuobjdump==$PIP13_VER into $P13"
  rm -rf "$P13/pip"; mkdir -p "$P13/bin"
  python3 -m pip install -q --disable-pip-version-check --no-deps --target "$P13/pip" \
    "nvidia-cuda-nvdisasm==$PIP13_VER" "nvidia-cuda-cuobjdump==$PIP13_VER" 2>"$P13/pip.err" \
    || die "pip install of nvdisasm/cuobjdump $PIP13_VER failed: $(grep -m1 ERROR "$P13/pip.err" || true)"
  rm -f "$P13/pip.err"
  for b in nvdisasm cuobjdump; do
    f=$(find "$P13/pip" -type f -path "*/bin/$b" | head -1); [ -n "$f" ] || die "$b not found in the pip wheel"
    ln -sfn "$f" "$P13/bin/$b"
  done
  printf 'nvidia-cuda-nvdisasm=%s\nnvidia-cuda-cuobjdump=%s\n' "$PIP13_VER" "$PIP13_VER" > "$P13/VERSIONS"
fi
printf 'export GPUSIM_CUDA13_HOME=%s\nexport GPUSIM_NVCC13=%s\nexport GPUSIM_PTXAS13=%s\nexport GPUSIM_NVDISASM13=%s/bin/nvdisasm\nexport GPUSIM_CUOBJDUMP13=%s/bin/cuobjdump\n' \
  "$P13" "$NVCC13" "$PTXAS13" "$P13" "$P13" > "$P13/env.sh"

# ---- smoke test: compile a kernel for each arch and disassemble it ----
T=$(mktemp -d /tmp/gpusim-tc-test.XXXXXX)
echo 'template<int B> __global__ void k(float*a){__shared__ float s[B];s[threadIdx.x]=a[threadIdx.x];__syncthreads();a[threadIdx.x]=s[B-1-threadIdx.x];} template __global__ void k<32>(float*);' > "$T/t.cu"
for sm in 35 52 90; do
  if [ $sm = 90 ]; then nvcc=$NVCC13 dis=$P13/bin/nvdisasm; else nvcc=$P11/bin/nvcc dis=$P11/bin/nvdisasm; fi
  "$nvcc" -arch=sm_$sm -cubin -o "$T/t$sm.cubin" "$T/t.cu" >"$T/log" 2>&1 || die "nvcc sm_$sm smoke test failed: $(head -c 300 "$T/log")"
  "$dis" -hex "$T/t$sm.cubin" >"$T/sass" 2>&1 && grep -q EXIT "$T/sass" || die "nvdisasm sm_$sm smoke test failed: $(head -c 300 "$T/sass")"
done
rm -rf "$T"

ver() { "$1" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\), V\([0-9.]*\).*/\2/p'; }
mkdir -p "$(dirname "$JSON")"
python3 - "$JSON" <<EOF
import json, sys
tc = {
  "cuda11": {"home": "$P11", "archs": ["sm_35", "sm_52"], "nvcc": "$P11/bin/nvcc", "ptxas": "$P11/bin/ptxas",
             "nvdisasm": "$P11/bin/nvdisasm", "cuobjdump": "$P11/bin/cuobjdump", "host_cxx": "$CXX",
             "version": "$(ver "$P11/bin/nvcc.bin")", "packages": dict(l.split("=", 1) for l in """$(cat "$P11/VERSIONS")""".split())},
  "cuda13": {"home": "$P13", "archs": ["sm_90"], "nvcc": "$NVCC13", "ptxas": "$PTXAS13",
             "nvdisasm": "$P13/bin/nvdisasm", "cuobjdump": "$P13/bin/cuobjdump",
             "version": "$(ver "$NVCC13")", "nvdisasm_version": "$(ver "$P13/bin/nvdisasm")",
             "packages": dict(l.split("=", 1) for l in """$(cat "$P13/VERSIONS")""".split())},
}
json.dump(tc, open(sys.argv[1], "w"), indent=2)
EOF
log "OK: sm_35/sm_52 via $P11/bin/nvcc ($(ver "$P11/bin/nvcc.bin")), sm_90 via $NVCC13 ($(ver "$NVCC13")); manifest $JSON"
