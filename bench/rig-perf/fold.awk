# Folds `perf script -F ip,sym` stacks (one frame a line, a blank line between
# samples, innermost first). Each sample is charged to its innermost frame that
# matches OWN (the nearest function of ours, with the library and kernel time
# under it): lines "OWN <share> <function>". Also, per function of ours, the share
# of samples spent in the allocator under it (ALLOC), and the nearest caller of ours
# above readFile (READFILE) and above std::filesystem's directory_iterator
# (DIRITER). A caller shown as "(none)" is a stack cut short by the sampled stack
# size (readFile keeps a 16 KiB buffer on its frame).
function emit(   i, j, own, c, alloc) {
  own = ""
  alloc = 0
  for (i = 0; i < n; i++) {
    if (frames[i] ~ OWN) { own = frames[i]; break }
    if (frames[i] ~ /^(malloc|cfree|free|operator new|operator delete|realloc)/) alloc = 1
  }
  if (own == "") own = "(not ours) " frames[n - 1]
  cnt[own]++
  if (alloc) al[own]++
  for (i = 0; i < n; i++) {
    if (frames[i] ~ /readFile$/) {
      c = "(none)"
      for (j = i + 1; j < n; j++) if (frames[j] ~ OWN) { c = frames[j]; break }
      rf[c]++
      break
    }
  }
  for (i = 0; i < n; i++) {
    if (frames[i] ~ /directory_iterator/) {
      c = "(none)"
      for (j = i + 1; j < n; j++) if (frames[j] ~ OWN) { c = frames[j]; break }
      di[c]++
      break
    }
  }
  total++
}
/^[ \t]*$/ { if (n) emit(); n = 0; next }
{ s = $0; sub(/^[ \t]*[0-9a-f]+ /, "", s); frames[n++] = s }
END {
  if (n) emit()
  print "TOTAL " total
  for (k in cnt) printf "OWN %6.2f%% %s\n", 100 * cnt[k] / total, k
  for (k in al) printf "ALLOC %6.2f%% %s\n", 100 * al[k] / total, k
  for (k in rf) printf "READFILE %6.2f%% %s\n", 100 * rf[k] / total, k
  for (k in di) printf "DIRITER %6.2f%% %s\n", 100 * di[k] / total, k
}
