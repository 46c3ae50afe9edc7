CREATE TABLE planted (n int);
