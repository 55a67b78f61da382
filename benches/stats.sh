# Shared by the bench scripts (sourced): the median of numbers on stdin, one per
# line; and `stats`, the median followed by the range in parentheses.
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
stats() { sort -n | awk '{a[NR]=$1} END {m = (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); printf "%s (%s-%s)", m, a[1], a[NR]}'; }
