import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = ((((-100) ^ (-a)) & t0) * (-(-(100 ^ b))))
        t2 = pto.select((((100 + 3) | (100 - 1)) | ((-7 * t0) * (3 & 100))) >= ((t1 ^ t1) ^ ((a & 1) | t1)), (((100 + 3) | (100 - 1)) | ((-7 * t0) * (3 & 100))), ((t1 ^ t1) ^ ((a & 1) | t1)))
        t3 = 1
        t4 = (100 | (-(-(t2 ^ -7))))
        pto.store(o + i, t4)
