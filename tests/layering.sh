#!/bin/bash
# The layout's rules, checked on the source tree (docs/layout.md):
#   base <- kube <- cgroupfs, resctrl, gpu <- metrics <- qos, prediction <- nri, runtimeproxy <- agent
# 1. a source file includes headers of its own folder and of folders below it only
#    (cgroupfs, resctrl and gpu, qos and prediction, nri and runtimeproxy are side by side: neither
#    includes the other);
# 2. each folder's meson library depends on the libraries of folders below it only;
# 3. base/ uses no third-party library (its meson dependencies are the C++ runtime's);
# 4. no source file is over 900 lines (a newcomer reads one in a sitting).
# Prints every breach with its file and line; exits 1 when there is one.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

declare -A rank=([base]=0 [kube]=1 [cgroupfs]=2 [resctrl]=2 [gpu]=2 [metrics]=3 [qos]=4 [prediction]=4 [nri]=5 [runtimeproxy]=5 [agent]=6)
breaches=0
breach() {
  echo "layering: $*"
  breaches=$((breaches + 1))
}

# May a file in folder $1 use folder $2?
allowed() {
  [[ $1 == "$2" ]] && return 0
  ((${rank[$2]} < ${rank[$1]}))
}

for folder in "${!rank[@]}"; do
  [[ -d $folder ]] || { breach "folder $folder/ is missing"; continue; }
  while IFS= read -r file; do
    # 1. includes
    while IFS=: read -r line text; do
      target=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]+"([^/"]+)\/.*/\1/' <<<"$text")
      [[ -n ${rank[$target]+set} ]] || continue
      allowed "$folder" "$target" || breach "$file:$line includes $target/ (${folder}/ may include only folders below it)"
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$file" || true)
    # 4. length
    lines=$(wc -l <"$file")
    ((lines <= 900)) || breach "$file has $lines lines (over 900)"
  done < <(find "$folder" -maxdepth 1 -type f \( -name '*.h' -o -name '*.cpp' \) | sort)

  # 2. meson dependencies: every <folder>_dep named in this folder's meson.build
  meson="$folder/meson.build"
  [[ -f $meson ]] || { breach "$meson is missing"; continue; }
  while IFS=: read -r line text; do
    for dep in $(grep -oE '\b[a-z]+_dep\b' <<<"$text"); do
      target=${dep%_dep}
      [[ -n ${rank[$target]+set} ]] || continue
      allowed "$folder" "$target" || breach "$meson:$line depends on $dep"
    done
  done < <(grep -n 'dependencies' "$meson" || true)
done

# 3. base/ links nothing third-party.
if grep -nE '\b(boost|ssl|json|yaml|prom|cgroup|protobuf)_dep\b' base/meson.build; then
  breach "base/meson.build names a third-party dependency"
fi

if ((breaches > 0)); then
  echo "layering: $breaches breach(es)"
  exit 1
fi
echo "layering: ok (${#rank[@]} folders)"
