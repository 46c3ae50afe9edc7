CREATE TABLE other (n int);
