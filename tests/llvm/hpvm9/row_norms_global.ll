; hpvm's own test program, written as HPVM's GenHPVM writes HPVM IR (LLVM 9 text): typed
; pointers, bare in/out attributes, packed %struct.out.* return types, node functions passed
; to createNode through bitcast constant expressions, hints as named metadata, a packed
; RootIn and a main that launches the root.
;
; The Euclidean norm of each row of X (rows of m floats): a leaf in the CUDA convention,
; its row the global index i = gx * gridx + lx (the parent's id times the leaf's instance
; count, getNumNodeInstances, plus its own id, in int as clang computes it), a loop over
; the row's m elements (m an i32 port: the host bounds it), llvm.sqrt.f32, and the store
; Out[i] after the loop, unguarded: as HPVM's benchmarks assume, the host launches exactly
; groups * 32 rows. The leaf returns Out's byte size, bound out through the wrapper to the
; root.
; ModuleID = 'row_norms.c'
source_filename = "row_norms.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.Root = type { float*, i64, float*, i64, i32, i64, %struct.out.NormsRoot }
%struct.out.norms = type <{ i64 }>
%struct.out.NormsGroup = type <{ i64 }>
%struct.out.NormsRoot = type <{ i64 }>

; Function Attrs: nounwind uwtable
define dso_local %struct.out.norms @norms_cloned(float* in %X, i64 %bytes_X, float* out %Out, i64 %bytes_Out, i32 %m) #0 {
entry:
  %node = call i8* @llvm.hpvm.getNode()
  %parent = call i8* @llvm.hpvm.getParentNode(i8* %node)
  %lx = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %node)
  %gx = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %parent)
  %dimx = call i64 @llvm.hpvm.getNumNodeInstances.x(i8* %node)
  %lx32 = trunc i64 %lx to i32
  %gx32 = trunc i64 %gx to i32
  %dim32 = trunc i64 %dimx to i32
  %mul = mul nsw i32 %gx32, %dim32
  %i = add nsw i32 %mul, %lx32
  %row = mul nsw i32 %i, %m
  %cmp = icmp sgt i32 %m, 0
  br i1 %cmp, label %for.body.preheader, label %for.end

for.body.preheader:                               ; preds = %entry
  %row64 = sext i32 %row to i64
  %m64 = zext i32 %m to i64
  br label %for.body

for.body:                                         ; preds = %for.body, %for.body.preheader
  %k = phi i64 [ 0, %for.body.preheader ], [ %k.next, %for.body ]
  %s = phi float [ 0.000000e+00, %for.body.preheader ], [ %s.next, %for.body ]
  %idx = add nsw i64 %k, %row64
  %px = getelementptr inbounds float, float* %X, i64 %idx
  %x = load float, float* %px, align 4, !tbaa !5
  %sq = fmul float %x, %x
  %s.next = fadd float %s, %sq
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, %m64
  br i1 %done, label %for.end, label %for.body

for.end:                                          ; preds = %for.body, %entry
  %sum = phi float [ 0.000000e+00, %entry ], [ %s.next, %for.body ]
  %norm = call float @llvm.sqrt.f32(float %sum)
  %i64 = sext i32 %i to i64
  %po = getelementptr inbounds float, float* %Out, i64 %i64
  store float %norm, float* %po, align 4, !tbaa !5
  %returnStruct = insertvalue %struct.out.norms undef, i64 %bytes_Out, 0
  ret %struct.out.norms %returnStruct
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.NormsGroup @NormsGroup_cloned(float* in %X, i64 %bytes_X, float* out %Out, i64 %bytes_Out, i32 %m) #0 {
entry:
  %norms_cloned.node = call i8* @llvm.hpvm.createNode1D(i8* bitcast (%struct.out.norms (float*, i64, float*, i64, i32)* @norms_cloned to i8*), i64 32)
  call void @llvm.hpvm.bind.input(i8* %norms_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %norms_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %norms_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %norms_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %norms_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.output(i8* %norms_cloned.node, i32 0, i32 0, i1 false)
  ret %struct.out.NormsGroup undef
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.NormsRoot @NormsRoot_cloned(float* in %X, i64 %bytes_X, float* out %Out, i64 %bytes_Out, i32 %m, i64 %groups) #0 {
entry:
  %NormsGroup_cloned.node = call i8* @llvm.hpvm.createNode1D(i8* bitcast (%struct.out.NormsGroup (float*, i64, float*, i64, i32)* @NormsGroup_cloned to i8*), i64 %groups)
  call void @llvm.hpvm.bind.input(i8* %NormsGroup_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %NormsGroup_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %NormsGroup_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %NormsGroup_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %NormsGroup_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.output(i8* %NormsGroup_cloned.node, i32 0, i32 0, i1 false)
  ret %struct.out.NormsRoot undef
}

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #1 {
entry:
  %RootArgs = alloca %struct.Root, align 8
  %0 = bitcast %struct.Root* %RootArgs to i8*
  call void @llvm.lifetime.start.p0i8(i64 56, i8* nonnull %0) #2
  call void @llvm.hpvm.init()
  %graphID = call i8* @llvm.hpvm.launch(i8* bitcast (%struct.out.NormsRoot (float*, i64, float*, i64, i32, i64)* @NormsRoot_cloned to i8*), i8* nonnull %0, i1 false)
  call void @llvm.hpvm.wait(i8* %graphID)
  call void @llvm.hpvm.cleanup()
  call void @llvm.lifetime.end.p0i8(i64 56, i8* nonnull %0) #2
  ret i32 0
}

; Function Attrs: nounwind
declare i8* @llvm.hpvm.getNode() #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.getParentNode(i8*) #2

; Function Attrs: nounwind
declare i64 @llvm.hpvm.getNodeInstanceID.x(i8*) #2

; Function Attrs: nounwind
declare i64 @llvm.hpvm.getNumNodeInstances.x(i8*) #2

; Function Attrs: nounwind readnone speculatable
declare float @llvm.sqrt.f32(float) #4

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode1D(i8*, i64) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.output(i8*, i32, i32, i1) #2

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.start.p0i8(i64 immarg, i8* nocapture) #3

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.end.p0i8(i64 immarg, i8* nocapture) #3

; Function Attrs: nounwind
declare void @llvm.hpvm.init() #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.wait(i8*) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.cleanup() #2

attributes #0 = { nounwind uwtable "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "min-legal-vector-width"="0" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-jump-tables"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #1 = { nounwind uwtable "no-frame-pointer-elim"="false" "target-cpu"="x86-64" }
attributes #2 = { nounwind }
attributes #3 = { argmemonly nounwind }
attributes #4 = { nounwind readnone speculatable }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}
!hpvm_hint_cpu = !{!3}
!hpvm_hint_gpu = !{!2, !8}
!hpvm_hint_cpu_gpu = !{}
!hpvm_hint_cudnn = !{}
!hpvm_hint_promise = !{}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 9.0.0"}
!2 = !{%struct.out.norms (float*, i64, float*, i64, i32)* @norms_cloned}
!3 = !{%struct.out.NormsRoot (float*, i64, float*, i64, i32, i64)* @NormsRoot_cloned}
!4 = !{!"Simple C/C++ TBAA"}
!5 = !{!6, !6, i64 0}
!6 = !{!"float", !7, i64 0}
!7 = !{!"omnipotent char", !4, i64 0}
!8 = !{%struct.out.NormsGroup (float*, i64, float*, i64, i32)* @NormsGroup_cloned}
