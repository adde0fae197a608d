{#- ducklake__ dispatch implementations live in this folder, one verb per file. -#}
