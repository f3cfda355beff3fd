import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select((((a - b) - (1.5 + a)) - b) < ((-(a - b)) + ((-3.0 * b) - pto.select(b <= b, b, b))), (((a - b) - (1.5 + a)) - b), ((-(a - b)) + ((-3.0 * b) - pto.select(b <= b, b, b))))
        t1 = pto.select((((t0 * 2.0) * (--3.0)) * pto.select(b < (b - b), b, (b - b))) >= b, (((t0 * 2.0) * (--3.0)) * pto.select(b < (b - b), b, (b - b))), b)
        pto.store(o + i, t1)
