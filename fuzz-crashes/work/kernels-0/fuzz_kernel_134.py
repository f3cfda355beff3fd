import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-pto.select(((b - b) - pto.select(b >= b, b, b)) == pto.select((2.0 - a) <= pto.select(b <= b, b, b), (2.0 - a), pto.select(b <= b, b, b)), ((b - b) - pto.select(b >= b, b, b)), pto.select((2.0 - a) <= pto.select(b <= b, b, b), (2.0 - a), pto.select(b <= b, b, b))))
        t1 = b
        if a >= t0:
            t1 = pto.select((((b - 2.0) - (a - a)) + pto.select((--3.0) == pto.select(-3.0 != 1.5, -3.0, 1.5), (--3.0), pto.select(-3.0 != 1.5, -3.0, 1.5))) != (((b + b) - a) + (-(a - b))), (((b - 2.0) - (a - a)) + pto.select((--3.0) == pto.select(-3.0 != 1.5, -3.0, 1.5), (--3.0), pto.select(-3.0 != 1.5, -3.0, 1.5))), (((b + b) - a) + (-(a - b))))
        pto.store(o + i, t1)
