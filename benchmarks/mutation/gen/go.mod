module lwsc.local/mutation-gen

go 1.26.0
