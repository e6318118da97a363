#ifndef OPS_H
#define OPS_H

long add(long a, long b);

#endif
