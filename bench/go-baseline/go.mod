module topox.io/bench/go-baseline

go 1.19
