import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((-7 | ((1 & a) ^ (b + a))) - (((b - a) ^ (b + b)) - 1))
        t1 = b
        if a < b:
            t1 = 100
        t2 = a
        t3 = (((t1 * (t0 & t0)) ^ t0) & b)
        t4 = pto.select((t0 ^ ((100 - 3) + (t0 ^ a))) == a, (t0 ^ ((100 - 3) + (t0 ^ a))), a)
        acc = a
        for j in range(3):
            acc = acc + t4
        pto.store(o + i, acc)
