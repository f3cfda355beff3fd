import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-(a | (b | (3 ^ b))))
        t1 = (((pto.select(b <= t0, b, t0) + (t0 | b)) + 1) + a)
        t2 = (pto.select(((t1 + a) | b) >= ((t0 | t0) - pto.select(a < 3, a, 3)), ((t1 + a) | b), ((t0 | t0) - pto.select(a < 3, a, 3))) + (t0 ^ b))
        t3 = (t1 - 100)
        t4 = (((b - (t2 * t3)) * t2) + t0)
        t5 = b
        pto.store(o + i, t5)
