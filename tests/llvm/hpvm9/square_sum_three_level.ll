; hpvm's own test program in HPVM IR as HPVM's GenHPVM writes it (LLVM 9 text), three levels:
; PipeRoot creates Inner (an internal node) and sum (a leaf) with an edge between them; Inner
; creates square, replicated cols x rows. square writes B = A * A; sum adds B up into C[0]
; (after zeroing C with llvm.memset through a bitcast). Named and empty return structs
; (%emptyStruct, %emptyStruct.0), a pointer output travelling on an edge as pointer and size.
; ModuleID = 'squaresum.c'
source_filename = "squaresum.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.out.square = type <{ float*, i64 }>
%struct.out.Inner = type <{ float*, i64 }>
%emptyStruct = type {}
%emptyStruct.0 = type {}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.square @square_cloned(float* in %A, i64 %bytes_A, float* out %B, i64 %bytes_B, i64 %cols) #0 {
entry:
  %node = call i8* @llvm.hpvm.getNode()
  %parent = call i8* @llvm.hpvm.getParentNode(i8* %node)
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %node)
  %y = call i64 @llvm.hpvm.getNodeInstanceID.y(i8* %node)
  %row = mul nsw i64 %y, %cols
  %idx = add nsw i64 %row, %x
  %pa = getelementptr inbounds float, float* %A, i64 %idx
  %a = load float, float* %pa, align 4, !tbaa !3
  %sq = fmul float %a, %a
  %pb = getelementptr inbounds float, float* %B, i64 %idx
  store float %sq, float* %pb, align 4, !tbaa !3
  %returnStruct = insertvalue %struct.out.square undef, float* %B, 0
  %returnStruct1 = insertvalue %struct.out.square %returnStruct, i64 %bytes_B, 1
  ret %struct.out.square %returnStruct1
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.Inner @Inner_cloned(float* in %A, i64 %bytes_A, float* inout %B, i64 %bytes_B, i64 %rows, i64 %cols) #0 {
entry:
  %square_cloned.node = call i8* @llvm.hpvm.createNode2D(i8* bitcast (%struct.out.square (float*, i64, float*, i64, i64)* @square_cloned to i8*), i64 %cols, i64 %rows)
  call void @llvm.hpvm.bind.input(i8* %square_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %square_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %square_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %square_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %square_cloned.node, i32 5, i32 4, i1 false)
  call void @llvm.hpvm.bind.output(i8* %square_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.output(i8* %square_cloned.node, i32 1, i32 1, i1 false)
  ret %struct.out.Inner undef
}

; Function Attrs: nounwind uwtable
define dso_local %emptyStruct @sum_cloned(float* in %B, i64 %bytes_B, float* out %C, i64 %bytes_C) #0 {
entry:
  %0 = bitcast float* %C to i8*
  call void @llvm.memset.p0i8.i64(i8* align 4 %0, i8 0, i64 %bytes_C, i1 false)
  %n = lshr i64 %bytes_B, 2
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %for.end, label %for.body

for.body:                                         ; preds = %entry, %for.body
  %i = phi i64 [ %i.next, %for.body ], [ 0, %entry ]
  %acc = phi float [ %acc.next, %for.body ], [ 0.000000e+00, %entry ]
  %p = getelementptr inbounds float, float* %B, i64 %i
  %v = load float, float* %p, align 4, !tbaa !3
  %acc.next = fadd float %acc, %v
  %i.next = add nuw i64 %i, 1
  %more = icmp ult i64 %i.next, %n
  br i1 %more, label %for.body, label %for.end

for.end:                                          ; preds = %for.body, %entry
  %total = phi float [ 0.000000e+00, %entry ], [ %acc.next, %for.body ]
  %1 = bitcast i8* %0 to float*
  store float %total, float* %1, align 4, !tbaa !3
  ret %emptyStruct undef
}

; Function Attrs: nounwind uwtable
define dso_local %emptyStruct.0 @PipeRoot_cloned(float* in %A, i64 %bytes_A, float* inout %B, i64 %bytes_B, float* out %C, i64 %bytes_C, i64 %rows, i64 %cols) #0 {
entry:
  %Inner_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.Inner (float*, i64, float*, i64, i64, i64)* @Inner_cloned to i8*))
  %sum_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%emptyStruct (float*, i64, float*, i64)* @sum_cloned to i8*))
  call void @llvm.hpvm.bind.input(i8* %Inner_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %Inner_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %Inner_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %Inner_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %Inner_cloned.node, i32 6, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %Inner_cloned.node, i32 7, i32 5, i1 false)
  %output = call i8* @llvm.hpvm.createEdge(i8* %Inner_cloned.node, i8* %sum_cloned.node, i1 true, i32 0, i32 0, i1 false)
  %output1 = call i8* @llvm.hpvm.createEdge(i8* %Inner_cloned.node, i8* %sum_cloned.node, i1 true, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %sum_cloned.node, i32 4, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %sum_cloned.node, i32 5, i32 3, i1 false)
  ret %emptyStruct.0 undef
}

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #0 {
entry:
  %args = tail call noalias i8* @malloc(i64 64) #2
  call void @llvm.hpvm.init()
  %graphID = call i8* @llvm.hpvm.launch(i8* bitcast (%emptyStruct.0 (float*, i64, float*, i64, float*, i64, i64, i64)* @PipeRoot_cloned to i8*), i8* %args, i1 false)
  call void @llvm.hpvm.wait(i8* %graphID)
  call void @llvm.hpvm.cleanup()
  ret i32 0
}

; Function Attrs: nofree nounwind
declare dso_local noalias i8* @malloc(i64) local_unnamed_addr #1

; Function Attrs: nounwind
declare i8* @llvm.hpvm.getNode() #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.getParentNode(i8*) #2

; Function Attrs: nounwind
declare i64 @llvm.hpvm.getNodeInstanceID.x(i8*) #2

; Function Attrs: nounwind
declare i64 @llvm.hpvm.getNodeInstanceID.y(i8*) #2

; Function Attrs: argmemonly nounwind
declare void @llvm.memset.p0i8.i64(i8* nocapture writeonly, i8, i64, i1 immarg) #3

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode(i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode2D(i8*, i64, i64) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createEdge(i8*, i8*, i1, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.output(i8*, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.init() #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.wait(i8*) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.cleanup() #2

attributes #0 = { nounwind uwtable "no-frame-pointer-elim"="false" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" }
attributes #1 = { nofree nounwind "no-frame-pointer-elim"="false" }
attributes #2 = { nounwind }
attributes #3 = { argmemonly nounwind }

!llvm.module.flags = !{!0}
!hpvm_hint_cpu = !{!1, !2, !5, !6}
!hpvm_hint_gpu = !{}
!hpvm_hint_cpu_gpu = !{}
!hpvm_hint_cudnn = !{}
!hpvm_hint_promise = !{}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{%struct.out.square (float*, i64, float*, i64, i64)* @square_cloned}
!2 = !{%struct.out.Inner (float*, i64, float*, i64, i64, i64)* @Inner_cloned}
!3 = !{!4, !4, i64 0}
!4 = !{!"float", !7, i64 0}
!5 = !{%emptyStruct (float*, i64, float*, i64)* @sum_cloned}
!6 = !{%emptyStruct.0 (float*, i64, float*, i64, float*, i64, i64, i64)* @PipeRoot_cloned}
!7 = !{!"omnipotent char", !8, i64 0}
!8 = !{!"Simple C/C++ TBAA"}
