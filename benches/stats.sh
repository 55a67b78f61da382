# Shared by the bench scripts (sourced): the median of numbers on stdin, one per
# line; and `stats`, the median followed by the range in parentheses.
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
stats() { sort -n | awk '{a[NR]=$1} END {m = (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); printf "%s (%s-%s)", m, a[1], a[NR]}'; }
# `median_ci`: the median and a 95% confidence interval for it, distribution-free
# (the order statistics n/2 - 0.98 sqrt(n) and 1 + n/2 + 0.98 sqrt(n), rounded,
# of the sorted numbers; for 6 or more).
median_ci() { sort -n | awk '{a[NR]=$1} END {m = (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); d = 0.98 * sqrt(NR); lo = int(NR/2 - d + 0.5); hi = int(NR/2 + 1 + d + 0.5); if (lo < 1) lo = 1; if (hi > NR) hi = NR; printf "%.4f (95%% interval %.4f-%.4f, range %.4f-%.4f)", m, a[lo], a[hi], a[1], a[NR]}'; }
