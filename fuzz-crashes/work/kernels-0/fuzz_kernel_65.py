import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select((a | ((b ^ a) - (-b))) > (((b & 1) ^ (100 - a)) & (pto.select(b < b, b, b) * (a + 1))), (a | ((b ^ a) - (-b))), (((b & 1) ^ (100 - a)) & (pto.select(b < b, b, b) * (a + 1))))
        t1 = t0
        if t0 < a:
            t1 = ((-t0) - pto.select((-t0) != (pto.select(-7 != b, -7, b) ^ (100 | t0)), (-t0), (pto.select(-7 != b, -7, b) ^ (100 | t0))))
        t2 = pto.select(-7 <= t0, -7, t0)
        pto.store(o + i, t2)
