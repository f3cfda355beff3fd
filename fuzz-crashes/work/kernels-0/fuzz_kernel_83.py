import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = (b - pto.select((1 | b) >= (100 - b), (1 | b), (100 - b)))
        t2 = (pto.select(((t1 ^ a) * (a | 100)) == ((t1 & 100) - pto.select(3 != t1, 3, t1)), ((t1 ^ a) * (a | 100)), ((t1 & 100) - pto.select(3 != t1, 3, t1))) - (a | ((a * b) | t0)))
        t3 = pto.select((-1) == -7, (-1), -7)
        t4 = ((((1 & a) * (t1 & 3)) - 100) * t2)
        pto.store(o + i, t4)
